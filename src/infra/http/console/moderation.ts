// Moderation from the console: a few NIP-86 methods, called by the node on behalf of the signed-in identity
// (ConsoleSource.manage checks them as the NIP-86 endpoint would). The console narrows further: only the
// methods its Moderation view offers, an admin only in their communities, archiving for operators only. Every
// call is logged with who made it.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isCommunityId } from '../../../protocols/ids.js'
import { type Nip86Method, toNip86Error } from '../../../protocols/nip86/methods.js'
import { reason } from '../../../protocols/reasons.js'
import type { Logger } from '../../log.js'
import { readJsonBody } from '../request-body.js'
import { sendJson, sendRefusal } from './console-http.js'
import type { ConsoleSource } from './console-source.js'
import { type Access, inScope } from './scope.js'

const CONSOLE_METHODS: ReadonlySet<string> = new Set<Nip86Method>([
  'banpubkey',
  'unbanpubkey',
  'blockip',
  'unblockip',
  'banevent',
  'allowevent',
  'archivecommunity',
  'listbannedpubkeys',
  'listblockedips',
  'listbannedevents',
  'listallowedpubkeys',
])
const OPERATOR_ONLY: ReadonlySet<string> = new Set<Nip86Method>(['archivecommunity'])
// a method name and a pubkey, an address or an event id with a reason: far below this
const MAX_BODY_BYTES = 16_384
const MAX_PARAMS = 8

export const isConsoleMethod = (method: string): boolean => CONSOLE_METHODS.has(method)

/** `POST /console/api/moderate` `{community, method, params}` → the NIP-86 response (its `error` set on refusal). */
export async function moderate(req: IncomingMessage, res: ServerResponse, source: ConsoleSource, who: Access, log: Logger): Promise<void> {
  const body = (await readJsonBody(req, MAX_BODY_BYTES)) as { community?: unknown; method?: unknown; params?: unknown } | undefined
  if (typeof body !== 'object' || body === null) return sendJson(res, 400, toNip86Error(reason('invalid', 'body must be a JSON object')))
  const { community, method } = body
  const params = body.params ?? []
  if (typeof community !== 'string' || !isCommunityId(community))
    return sendJson(res, 400, toNip86Error(reason('invalid', 'community must be a community id')))
  if (typeof method !== 'string' || !isConsoleMethod(method))
    return sendJson(res, 400, toNip86Error(reason('invalid', `method must be one of ${[...CONSOLE_METHODS].join(', ')}`)))
  if (!Array.isArray(params) || params.length > MAX_PARAMS)
    return sendJson(res, 400, toNip86Error(reason('invalid', 'params must be an array')))
  if (!inScope(who.scope, community)) return sendJson(res, 403, toNip86Error(reason('restricted', 'you may not manage this community')))
  if (OPERATOR_ONLY.has(method) && who.role !== 'operator')
    return sendJson(res, 403, toNip86Error(reason('restricted', `only relay operators may call ${method}`)))
  log.info({ by: who.pubkey, community, method, params }, 'console: moderation')
  try {
    sendJson(res, 200, await source.manage(community, who.pubkey, { method, params }))
  } catch (error) {
    log.error({ err: error, by: who.pubkey, community, method }, 'console: moderation call failed')
    sendRefusal(res, 500, reason('error', 'management call failed'))
  }
}
