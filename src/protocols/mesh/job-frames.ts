// What nodes tell each other about dispatched jobs (docs/mesh.md §9, docs/jobs.md#in-a-cluster), carried in
// tunnel Requests like the channel session's. A capability's dispatcher runs on the owner of its session
// (`capability:<name>`); every other node sends it, fenced like any session frame, what its own clients did
// (`jobs`: requests stored, reports stored, requests deleted, agents come and gone); the owner sends an
// assignment or revocation to the node its agent is connected to (`job-deliver`), and tells every node when it
// takes a session over (`job-owner`), so that they send it their agents at once.
import { z } from 'zod'
import { COMMUNITY_ID_PATTERN, HEX64_PATTERN } from '../ids.js'
import { isCapabilityName, MAX_CAPABILITY_CHARS } from '../jobs.js'
import { reason } from '../reasons.js'
import { err, ok, type Result } from '../result.js'
import { fenceSchema, refusalSchema } from './session-frames.js'

const hex64 = z.string().regex(HEX64_PATTERN)
/** a connection id on the node that names it (never interpreted by another node) */
const conn = z.string().min(1).max(64)
const capability = z.string().max(MAX_CAPABILITY_CHARS).refine(isCapabilityName)
/** one batch a node sends its owner; a node batches what waits while one is in flight */
export const MAX_NOTES_PER_BATCH = 256
/** chunks one batch to a peer carries at most (what waits while one is in flight goes as the next) */
export const MAX_CHUNKS_PER_BATCH = 256
/** agents one node reports for one capability */
export const MAX_AGENTS_PER_NODE = 10_000
/** jobs of one capability one agent connection is reported holding (an agent takes at most 1,000 at once) */
export const MAX_HOLDS_PER_AGENT = 1_000
const MAX_REQUEST_JSON_BYTES = 1_048_576

const agent = z.strictObject({
  conn,
  pubkey: hex64,
  load: z.number().min(0).max(1).optional(),
  concurrency: z.number().int().min(1).max(1_000_000),
  /** not listening for assignments now, or SUSPECT: keeps its jobs, gets no new one */
  holdsOnly: z.boolean().optional(),
  /** the jobs of the capability this node delivered to the connection, at their generation */
  holds: z
    .array(z.strictObject({ job: hex64, generation: z.number().int().min(1) }))
    .max(MAX_HOLDS_PER_AGENT)
    .optional(),
})

const note = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('Enqueued'),
    job: z.strictObject({
      id: hex64,
      requester: hex64,
      kind: z.number().int().min(5000).max(5999),
      raw: z.string().max(MAX_REQUEST_JSON_BYTES),
      queuedAtMs: z.number().int().min(0),
      deadlineAtMs: z.number().int().min(0).nullable(),
    }),
  }),
  z.strictObject({
    type: z.literal('Reported'),
    pubkey: hex64,
    report: z.strictObject({
      job: hex64,
      generation: z.number().int().min(1).optional(),
      what: z.enum(['result', 'chunk', 'processing', 'partial', 'error', 'other']),
      retry: z.boolean(),
      seq: z.number().int().min(0).optional(),
    }),
  }),
  z.strictObject({ type: z.literal('Cancelled'), jobs: z.array(hex64).max(1_000) }),
  z.strictObject({ type: z.literal('AgentGone'), conn, why: z.enum(['closed', 'lapsed']) }),
  /** the sender dropped notes it could not deliver: the owner reads its open jobs from the store again */
  z.strictObject({ type: z.literal('Resync') }),
  /** every ACTIVE agent connection of the sender offering the capability, now (replaces what it sent before) */
  z.strictObject({ type: z.literal('Agents'), agents: z.array(agent).max(MAX_AGENTS_PER_NODE) }),
])

const notesRequest = z.strictObject({ op: z.literal('jobs'), fence: fenceSchema, notes: z.array(note).min(1).max(MAX_NOTES_PER_BATCH) })
const deliverRequest = z.strictObject({
  op: z.literal('job-deliver'),
  community: z.string().regex(COMMUNITY_ID_PATTERN),
  capability,
  /** absent on a revocation whose connection the owner does not know: to the connection here that holds the job */
  conn: conn.optional(),
  job: hex64,
  /** the relay-signed assignment (kind 25900, status assigned) or revocation, as sent to the agent */
  event: z.string().max(MAX_REQUEST_JSON_BYTES + 4_096),
  /** an assignment: who holds the job now, for the chunk fence on the agent's node; absent for a revocation */
  hold: z.strictObject({ requester: hex64, pubkey: hex64, generation: z.number().int().min(1) }).optional(),
})
const ownerRequest = z.strictObject({
  op: z.literal('job-owner'),
  fence: fenceSchema,
  /** the capability's open jobs, as its owner counts them: the queue's bound on every node */
  open: z.number().int().min(0).max(100_000_000).optional(),
})
/** job chunks (kind 25901) a node relayed, in the order it relayed them, for the requesters connected here */
const chunksRequest = z.strictObject({
  op: z.literal('job-chunks'),
  chunks: z
    .array(z.strictObject({ community: z.string().regex(COMMUNITY_ID_PATTERN), event: z.string().max(MAX_REQUEST_JSON_BYTES + 4_096) }))
    .min(1)
    .max(MAX_CHUNKS_PER_BATCH),
})
const request = z.discriminatedUnion('op', [notesRequest, deliverRequest, ownerRequest, chunksRequest])

const reply = z.union([
  z.strictObject({
    ok: z.literal(true),
    /** job-deliver: the connection took it */
    delivered: z.boolean().optional(),
    /** job-owner: the answering node's ACTIVE agents offering the capability */
    agents: z.array(agent).max(MAX_AGENTS_PER_NODE).optional(),
  }),
  refusalSchema,
])

export type JobNote = z.infer<typeof note>
export type AgentNote = z.infer<typeof agent>
export type JobMeshRequest = z.infer<typeof request>
export type JobNotesRequest = z.infer<typeof notesRequest>
export type JobDeliverRequest = z.infer<typeof deliverRequest>
export type JobChunksRequest = z.infer<typeof chunksRequest>
export type JobMeshReply = z.infer<typeof reply>

/** An agent connection on another node as the owner's dispatcher names it: `@<runtime>/<conn>`. */
export const remoteConn = (runtime: string, conn: string): string => `@${runtime}/${conn}`

/** The node and its own connection id of a name remoteConn made; undefined for a connection of this node. */
export function parseRemoteConn(name: string): { runtime: string; conn: string } | undefined {
  if (!name.startsWith('@')) return undefined
  const slash = name.indexOf('/')
  return slash === 65 ? { runtime: name.slice(1, 65), conn: name.slice(66) } : undefined
}

export const JOB_MESH_OPS: readonly string[] = ['jobs', 'job-deliver', 'job-owner', 'job-chunks']

export function parseJobMeshRequest(json: unknown): Result<JobMeshRequest> {
  const parsed = request.safeParse(json)
  return parsed.success ? ok(parsed.data) : err(reason('invalid', 'malformed mesh job request'))
}

export function parseJobMeshReply(json: unknown): Result<JobMeshReply> {
  const parsed = reply.safeParse(json)
  return parsed.success ? ok(parsed.data) : err(reason('invalid', 'malformed mesh job reply'))
}
