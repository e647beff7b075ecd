import type { Limits } from '../limits.js'
import { type Reason, reason } from '../reasons.js'
import { err, ok, type Result } from '../result.js'
import { type NostrEvent, parseEventWithRaw, utf8LongerThan } from './event.js'
import { countFilterValues, type Filter, parseFilters } from './filter.js'

/** A client frame after parsing; EVENT keeps the stored raw form (seven fields, fixed order). */
export type ClientMessage =
  | { type: 'EVENT'; event: NostrEvent; raw: string }
  | { type: 'REQ'; subId: string; filters: Filter[] }
  | { type: 'COUNT'; subId: string; filters: Filter[] }
  | { type: 'CLOSE'; subId: string }
  | { type: 'AUTH'; event: NostrEvent }

/**
 * How the relay answers a frame it refuses (docs/architecture.md §10): a malformed frame gets a NOTICE and
 * the connection stays up; a malformed EVENT or AUTH gets OK false; a refused REQ/COUNT gets CLOSED, never a NOTICE.
 */
export type ClientMessageError =
  | { kind: 'notice'; message: string }
  | { kind: 'ok-false'; eventId: string; reason: Reason }
  | { kind: 'closed'; subId: string; reason: Reason; refusal?: ReadRefusal }

/** Why a REQ/COUNT was refused for its cost, as the reads-refused metric labels it. */
export type ReadRefusal = 'values' | 'rows' | 'time'

type Parsed = Result<ClientMessage, ClientMessageError>

/** Parses one WebSocket text frame. Never throws, whatever the text. */
export function parseClientMessage(text: string, limits: Limits, nowSeconds: number): Parsed {
  // the socket layer enforces maxMessageBytes too; checked here so the parser is safe on its own
  if (utf8LongerThan(text, limits.maxMessageBytes)) return notice('invalid: message too large')
  let msg: unknown
  try {
    msg = JSON.parse(text)
  } catch {
    return notice('invalid: message is not JSON')
  }
  if (!Array.isArray(msg) || msg.length === 0) return notice('invalid: message is not a non-empty JSON array')
  switch (msg[0]) {
    case 'EVENT':
      return parseEventMessage(msg, limits, nowSeconds)
    case 'REQ':
    case 'COUNT':
      return parseQueryMessage(msg[0], msg, limits)
    case 'CLOSE':
      return parseCloseMessage(msg, limits)
    case 'AUTH':
      return parseAuthMessage(msg, limits)
    default:
      return notice('unsupported: unknown message type')
  }
}

function parseEventMessage(msg: unknown[], limits: Limits, nowSeconds: number): Parsed {
  if (msg.length !== 2) return notice('invalid: EVENT takes exactly one event')
  const parsed = parseEventWithRaw(msg[1], limits, nowSeconds)
  if (!parsed.ok) return err({ kind: 'ok-false', eventId: echoableId(msg[1]), reason: parsed.error })
  return ok({ type: 'EVENT', event: parsed.value.event, raw: parsed.value.raw })
}

/** NIP-42: AUTH is answered with OK. Its created_at window is nip42's (checkAuthEvent), not the EVENT one. */
function parseAuthMessage(msg: unknown[], limits: Limits): Parsed {
  if (msg.length !== 2) return notice('invalid: AUTH takes exactly one event')
  const parsed = parseEventWithRaw(msg[1], limits, undefined)
  if (!parsed.ok) return err({ kind: 'ok-false', eventId: echoableId(msg[1]), reason: parsed.error })
  return ok({ type: 'AUTH', event: parsed.value.event })
}

function parseQueryMessage(type: 'REQ' | 'COUNT', msg: unknown[], limits: Limits): Parsed {
  if (msg.length < 2) return notice(`invalid: ${type} needs a subscription id`)
  const subId = msg[1]
  const subOk = checkSubId(subId, limits)
  if (subOk !== undefined) {
    return err({ kind: 'closed', subId: typeof subId === 'string' ? subId : '', reason: subOk })
  }
  const filters = parseFilters(msg.slice(2), limits)
  if (!filters.ok) return err({ kind: 'closed', subId: subId as string, reason: filters.error })
  if (countFilterValues(filters.value) > limits.maxReqValues) {
    const why = reason('invalid', `too many values in this ${type}'s filters (max ${limits.maxReqValues})`)
    return err({ kind: 'closed', subId: subId as string, reason: why, refusal: 'values' })
  }
  return ok({ type, subId: subId as string, filters: filters.value })
}

/** Closing an unknown id is harmless, but a malformed one is a malformed frame: NOTICE. */
function parseCloseMessage(msg: unknown[], limits: Limits): Parsed {
  if (msg.length !== 2) return notice('invalid: CLOSE takes exactly one subscription id')
  const problem = checkSubId(msg[1], limits)
  if (problem !== undefined) return notice(problem)
  return ok({ type: 'CLOSE', subId: msg[1] as string })
}

/** NIP-01: a non-empty string of at most 64 characters; our limit may be lower. Undefined when fine. */
function checkSubId(v: unknown, limits: Limits): Reason | undefined {
  if (typeof v !== 'string') return reason('invalid', 'subscription id must be a string')
  if (v.length === 0) return reason('invalid', 'subscription id must not be empty')
  if (v.length > limits.maxSubidLength) return reason('invalid', 'subscription id too long')
  return undefined
}

/** The id to name in OK false: the client's `id` when it could be one, so an over-long string isn't echoed. */
function echoableId(event: unknown): string {
  if (typeof event !== 'object' || event === null) return ''
  const id = (event as Record<string, unknown>).id
  return typeof id === 'string' && id.length <= 64 ? id : ''
}

const notice = (message: string): Parsed => err({ kind: 'notice', message })
