// The body of a session request between mesh nodes, carried in a tunnel Request/Response. Every
// session frame carries the fence its sender believes in — {community, session, generation, owner} — and the
// receiver refuses one that does not match what it holds (session-directory's four reasons), so a frame
// routed on stale knowledge is never acted on by the wrong owner.
import { z } from 'zod'
import { COMMUNITY_ID_PATTERN, HEX64_PATTERN } from '../ids.js'
import { reason } from '../reasons.js'
import { err, ok, type Result } from '../result.js'
import { isSessionId, MAX_SESSION_ID_CHARS } from './session-id.js'

const hex64 = z.string().regex(HEX64_PATTERN)
/** the fence every session frame carries: the session and the owner its sender believes in */
export const fenceSchema = z.strictObject({
  community: z.string().regex(COMMUNITY_ID_PATTERN),
  session: z.string().max(MAX_SESSION_ID_CHARS).refine(isSessionId),
  generation: z.number().int().min(1),
  owner: hex64,
})
const REFUSALS = ['stale', 'no-lease', 'future', 'owner-mismatch'] as const
const holderSchema = z.strictObject({ owner: hex64, generation: z.number().int().min(1) })
/** a frame refused on its fence, with the holder the receiver knows */
export const refusalSchema = z.strictObject({ ok: z.literal(false), refused: z.enum(REFUSALS), holder: holderSchema.optional() })

/** A connection authenticates as a handful of pubkeys; far more is not a client's AUTH state. */
const MAX_FORWARDED_PUBKEYS = 64
const authSchema = z.strictObject({
  pubkeys: z.array(hex64).max(MAX_FORWARDED_PUBKEYS),
  owners: z.array(z.tuple([hex64, hex64])).max(MAX_FORWARDED_PUBKEYS),
  /** the write came from the forwarding node's host program (relay.publish), not from a client */
  host: z.literal(true).optional(),
})

const requestSchema = z.strictObject({
  op: z.literal('moderate'),
  fence: fenceSchema,
  /** the event's raw JSON, as the client sent it (its id covers exactly these bytes' content) */
  event: z.string().max(1_048_576),
  /** the client's AUTH state on the forwarding node, which the owner judges the write on; absent = none */
  auth: authSchema.optional(),
})

const replySchema = z.discriminatedUnion('ok', [
  z.strictObject({
    ok: z.literal(true),
    accepted: z.boolean(),
    message: z.string().max(1_000),
    generation: z.number().int().min(1),
    owner: hex64,
  }),
  refusalSchema,
])

export type ModerateRequest = z.infer<typeof requestSchema>
/** The forwarding node's client: the pubkeys it authenticated as, and each agent's owner as [agent, owner]. */
export type ForwardedAuth = z.infer<typeof authSchema>
/** No AUTH: the strictest judgement, for a request that says nothing of its client. */
export const NO_AUTH: ForwardedAuth = { pubkeys: [], owners: [] }
/** A write the forwarding node's host program made: judged as the community judges a host's write there. */
export const HOST_WRITE: ForwardedAuth = { pubkeys: [], owners: [], host: true }
export type ModerateReply = z.infer<typeof replySchema>

export function parseModerateRequest(json: unknown): Result<ModerateRequest> {
  const parsed = requestSchema.safeParse(json)
  return parsed.success ? ok(parsed.data) : err(reason('invalid', 'malformed mesh session request'))
}

export function parseModerateReply(json: unknown): Result<ModerateReply> {
  const parsed = replySchema.safeParse(json)
  return parsed.success ? ok(parsed.data) : err(reason('invalid', 'malformed mesh session reply'))
}
