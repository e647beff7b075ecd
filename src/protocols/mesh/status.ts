// The mesh status document: what `GET /mesh/status` answers and `apiary mesh status` prints.
// Operator scripts outside the repo read it, so its shape is a contract: a field is added here, with a
// version of the CLI that knows it, never renamed. The parser is strict (no unknown fields) because its one
// reader is the CLI, which prints the table from it: anything it doesn't recognise is better refused than
// shown half-understood.
import { z } from 'zod'
import { COMMUNITY_ID_PATTERN, HEX64_PATTERN } from '../ids.js'
import { type Reason, reason } from '../reasons.js'
import { err, ok, type Result } from '../result.js'
import { MAX_ENDPOINT_CHARS } from './gossip.js'
import { isSessionId, MAX_SESSION_ID_CHARS, SESSION_KINDS } from './session-id.js'

export interface MeshStatus {
  /** this node's runtime id (64 lowercase hex) */
  runtime: string
  draining: boolean
  peers: { runtime: string; endpoint: string; phi: number; suspect: boolean; connected: boolean }[]
  /** `session` is `<kind>:<id>`, e.g. `channel:general` with `kind: 'channel'` (session-id.ts) */
  sessions: { community: string; session: string; kind: string; generation: number; owner: string; local: boolean }[]
}

/** The body of the 404 a relay answers on `/mesh/status` when the mesh is off (the embedded default, APIARY_MESH=off). */
export const MESH_STATUS_DISABLED = { error: 'mesh is off' } as const

const runtimeSchema = z.string().regex(HEX64_PATTERN)
const communitySchema = z.string().regex(COMMUNITY_ID_PATTERN)

const peerSchema = z.strictObject({
  runtime: runtimeSchema,
  // same shape as a readiness record's endpoint, where a peer's endpoint comes from; no whitespace, so a
  // table column never splits
  endpoint: z
    .string()
    .max(MAX_ENDPOINT_CHARS)
    .regex(/^wss?:\/\/[^\s/]+(\/\S*)?$/),
  // JSON has no Infinity; phi-accrual.ts caps an overflowing phi at a large finite value
  phi: z.number().min(0).refine(Number.isFinite),
  suspect: z.boolean(),
  connected: z.boolean(),
})

const sessionSchema = z
  .strictObject({
    community: communitySchema,
    session: z.string().max(MAX_SESSION_ID_CHARS).refine(isSessionId),
    kind: z.enum(SESSION_KINDS),
    generation: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    owner: runtimeSchema,
    local: z.boolean(),
  })
  .refine((s) => s.session.startsWith(`${s.kind}:`), { message: 'kind differs from the session id', path: ['kind'] })

const statusSchema = z.strictObject({
  runtime: runtimeSchema,
  draining: z.boolean(),
  peers: z.array(peerSchema),
  sessions: z.array(sessionSchema),
})

/** A relay's answer on `/mesh/status`, accepted only in exactly the documented shape. */
export function parseMeshStatus(json: unknown): Result<MeshStatus> {
  const parsed = statusSchema.safeParse(json)
  if (parsed.success) return ok(parsed.data)
  const issue = parsed.error.issues[0]
  const where = issue === undefined || issue.path.length === 0 ? '' : ` at ${issue.path.join('.')}`
  return refuse(`malformed mesh status${where}`)
}

function refuse(why: string): Result<never, Reason> {
  return err(reason('invalid', why))
}
