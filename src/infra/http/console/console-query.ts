// The console's query strings (`/console/api/stream`, `/api/agents`, `/api/hot`), parsed from what a browser or a
// script sent: anything outside the documented values is `invalid:`, never guessed at.
import {
  AGENT_CONNECTION_STATES,
  type AgentConnectionState,
  CONSOLE_VIEWS,
  type ConsoleView,
  HOT_RANKINGS,
  type HotRanking,
} from '../../../protocols/console.js'
import { isCommunityId } from '../../../protocols/ids.js'
import { reason } from '../../../protocols/reasons.js'
import { err, ok, type Result } from '../../../protocols/result.js'

export interface ConsoleQuery {
  view: ConsoleView
  state?: AgentConnectionState
  capability?: string
  community?: string
  offset: number
  limit: number
  ranking: HotRanking
}

// A page of 500 agent rows is ~150 KB of JSON a second; the page's virtualised table asks for what it shows.
export const MAX_AGENT_PAGE = 500
export const DEFAULT_AGENT_PAGE = 100
const MAX_CAPABILITY_CHARS = 256

const isOneOf = <T extends string>(values: readonly T[], v: string): v is T => (values as readonly string[]).includes(v)

/** `view` defaults to overview and `ranking` to inFramesPerSecond; empty values count as absent. */
export function parseConsoleQuery(params: URLSearchParams): Result<ConsoleQuery> {
  const get = (name: string) => {
    const v = params.get(name)
    return v === null || v === '' ? undefined : v
  }
  const view = get('view') ?? 'overview'
  if (!isOneOf(CONSOLE_VIEWS, view)) return invalid(`view must be one of ${CONSOLE_VIEWS.join(', ')}`)
  const ranking = get('ranking') ?? 'inFramesPerSecond'
  if (!isOneOf(HOT_RANKINGS, ranking)) return invalid(`ranking must be one of ${HOT_RANKINGS.join(', ')}`)
  const state = get('state')
  if (state !== undefined && !isOneOf(AGENT_CONNECTION_STATES, state))
    return invalid(`state must be one of ${AGENT_CONNECTION_STATES.join(', ')}`)
  const community = get('community')
  if (community !== undefined && !isCommunityId(community)) return invalid('community is not a community id')
  const capability = get('capability')
  if (capability !== undefined && capability.length > MAX_CAPABILITY_CHARS) return invalid('capability too long')
  const offset = toCount(get('offset'), 0)
  if (offset === undefined) return invalid('offset must be a whole number')
  const limit = toCount(get('limit'), DEFAULT_AGENT_PAGE)
  if (limit === undefined || limit < 1 || limit > MAX_AGENT_PAGE) return invalid(`limit must be 1..${MAX_AGENT_PAGE}`)
  return ok({ view, state, capability, community, offset, limit, ranking })
}

function toCount(v: string | undefined, fallback: number): number | undefined {
  if (v === undefined) return fallback
  return /^\d{1,9}$/.test(v) ? Number(v) : undefined
}

const invalid = (text: string): Result<never> => err(reason('invalid', text))
