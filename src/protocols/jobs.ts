// Dispatched jobs (docs/jobs.md): NIP-90-shaped requests that name a capability and ask the relay to hand them
// to exactly one live agent, the relay-signed assignment that does it, and what the assignee sends back,
// each carrying the assignment's generation so the store can refuse whatever a superseded assignee still sends.
// Pure: the queue lives in the dispatcher actor, the fence in the event store.
import type { NostrEvent } from './nip01/event.js'
import type { EventTemplate } from './nip01/sign.js'
import { reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

/** NIP-90: job requests, their results (request kind + 1000) and job feedback */
export const KIND_JOB_REQUEST_MIN = 5000
export const KIND_JOB_REQUEST_MAX = 5999
export const RESULT_KIND_OFFSET = 1000
export const KIND_JOB_FEEDBACK = 7000
/** ephemeral, signed by the community's key: a job handed to (`assigned`) or taken from (`revoked`) one agent */
export const KIND_JOB_ASSIGNMENT = 25_900
/** ephemeral, from the assignee: one piece of a streamed result, in `seq` order */
export const KIND_JOB_CHUNK = 25_901

/** the tag a request carries to ask for dispatch; without it a request is plain NIP-90, broadcast */
export const TAG_DISPATCH = 'dispatch'
export const TAG_GENERATION = 'generation'
export const TAG_DEADLINE_MS = 'deadline_ms'
/** on an agent's `error` feedback: the job may go to another agent (a refusal is one) */
export const TAG_RETRY = 'retry'
/** on the relay's terminal `error` feedback and a revocation: why, as one word (JobErrorCode) */
export const TAG_CODE = 'code'
export const TAG_SEQ = 'seq'

/** capability names as the agent registry's `c` tags carry them */
const CAPABILITY = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/
export const MAX_CAPABILITY_CHARS = 64
export const isCapabilityName = (name: string): boolean => CAPABILITY.test(name)
const GENERATION = /^[1-9][0-9]{0,14}$/
const COUNT = /^(0|[1-9][0-9]{0,14})$/
const HEX64 = /^[0-9a-f]{64}$/

/** Why a job ended without a result, or why an assignment was taken back: what the requester's client throws. */
export type JobErrorCode = 'failed' | 'exhausted' | 'deadline' | 'cancelled' | 'superseded' | 'unavailable'

/** The feedback statuses an assignee sends (NIP-90 `status`); `success` is a result event instead. */
export type FeedbackStatus = 'processing' | 'partial' | 'error'

export const isJobRequestKind = (kind: number): boolean => kind >= KIND_JOB_REQUEST_MIN && kind <= KIND_JOB_REQUEST_MAX
export const isJobResultKind = (kind: number): boolean =>
  kind >= KIND_JOB_REQUEST_MIN + RESULT_KIND_OFFSET && kind <= KIND_JOB_REQUEST_MAX + RESULT_KIND_OFFSET
export const resultKindOf = (requestKind: number): number => requestKind + RESULT_KIND_OFFSET

const tagValue = (e: Pick<NostrEvent, 'tags'>, name: string): string | undefined => e.tags.find((t) => t[0] === name)?.[1]
const hasTag = (e: Pick<NostrEvent, 'tags'>, name: string): boolean => e.tags.some((t) => t[0] === name)

/** A request that asks for dispatch, as the relay queues it. */
export interface JobRequest {
  id: string
  requester: string
  kind: number
  capability: string
  /** how long after it is queued the requester still wants an answer; undefined: no deadline */
  deadlineMs: number | undefined
}

export const isDispatchRequest = (e: Pick<NostrEvent, 'kind' | 'tags'>): boolean => isJobRequestKind(e.kind) && hasTag(e, TAG_DISPATCH)

/**
 * A kind 5000–5999 with the dispatch tag: one `c` naming the capability, an optional `deadline_ms`.
 * `maxDeadlineMs` bounds what a requester may ask the relay to remember.
 */
export function parseJobRequest(e: NostrEvent, maxDeadlineMs: number): Result<JobRequest> {
  const caps = e.tags.filter((t) => t[0] === 'c')
  if (caps.length !== 1 || !CAPABILITY.test(caps[0]![1] ?? '')) {
    return err(reason('invalid', 'a dispatched job names exactly one capability: ["c", "<name>"]'))
  }
  const rawDeadline = tagValue(e, TAG_DEADLINE_MS)
  let deadlineMs: number | undefined
  if (rawDeadline !== undefined) {
    deadlineMs = COUNT.test(rawDeadline) ? Number(rawDeadline) : Number.NaN
    if (!(deadlineMs > 0 && deadlineMs <= maxDeadlineMs)) {
      return err(reason('invalid', `deadline_ms must be a whole number of milliseconds from 1 to ${maxDeadlineMs}`))
    }
  }
  return ok({ id: e.id, requester: e.pubkey, kind: e.kind, capability: caps[0]![1]!, deadlineMs })
}

/**
 * What an event says about a job, when it may: a result (6000–6999) or feedback (7000) naming a job by its
 * first `e`, with the generation it was sent under (undefined when it carries none: a plain NIP-90 provider),
 * or a chunk. Whether that job is dispatched, and whether this is its assignee, only the store and the
 * dispatcher know.
 */
export interface JobReport {
  job: string
  generation: number | undefined
  /** `result` and an `error` that is not retryable end the job; the rest do not */
  what: 'result' | 'chunk' | FeedbackStatus | 'other'
  retry: boolean
  /** a chunk's place in its stream */
  seq?: number
}

export function jobReportOf(e: NostrEvent): Result<JobReport | undefined> {
  const chunk = e.kind === KIND_JOB_CHUNK
  if (!chunk && !isJobResultKind(e.kind) && e.kind !== KIND_JOB_FEEDBACK) return ok(undefined)
  const job = tagValue(e, 'e')
  if (job === undefined || !HEX64.test(job)) {
    return chunk ? err(reason('invalid', 'a job chunk names its job: ["e", "<job id>"]')) : ok(undefined)
  }
  const rawGeneration = tagValue(e, TAG_GENERATION)
  if (rawGeneration !== undefined && !GENERATION.test(rawGeneration)) {
    return err(reason('invalid', 'generation must be a positive whole number'))
  }
  const generation = rawGeneration === undefined ? undefined : Number(rawGeneration)
  if (chunk) {
    const seq = tagValue(e, TAG_SEQ)
    if (generation === undefined || seq === undefined || !COUNT.test(seq)) {
      return err(reason('invalid', 'a job chunk carries ["generation", "<n>"] and ["seq", "<n>"]'))
    }
    return ok({ job, generation, what: 'chunk', retry: false, seq: Number(seq) })
  }
  if (isJobResultKind(e.kind)) return ok({ job, generation, what: 'result', retry: false })
  const status = tagValue(e, 'status')
  const what = status === 'processing' || status === 'partial' || status === 'error' ? status : 'other'
  return ok({ job, generation, what, retry: what === 'error' && hasTag(e, TAG_RETRY) })
}

/** Does this report end the job (its one final answer)? */
export const endsJob = (r: Pick<JobReport, 'what' | 'retry'>): boolean => r.what === 'result' || (r.what === 'error' && !r.retry)

/** The assignment the relay signs and sends to one connection of `agent`: the request travels in `content`. */
export function assignmentTemplate(a: {
  job: string
  agent: string
  capability: string
  generation: number
  acceptMs: number
  requestRaw: string
}): EventTemplate {
  return {
    kind: KIND_JOB_ASSIGNMENT,
    tags: [
      ['e', a.job],
      ['p', a.agent],
      ['c', a.capability],
      [TAG_GENERATION, String(a.generation)],
      ['status', 'assigned'],
      ['accept_ms', String(a.acceptMs)],
    ],
    content: a.requestRaw,
  }
}

/** An assignment's shape without its content or signature: what an agent's subscription must match to hear one. */
export function assignmentProbe(relay: string, agent: string, createdAt: number): NostrEvent {
  return { id: '0'.repeat(64), pubkey: relay, created_at: createdAt, kind: KIND_JOB_ASSIGNMENT, tags: [['p', agent]], content: '', sig: '' }
}

/** Takes an assignment back from its agent: the job was cancelled, passed its deadline, or went elsewhere. */
export function revocationTemplate(a: { job: string; agent: string; generation: number; code: JobErrorCode }): EventTemplate {
  return {
    kind: KIND_JOB_ASSIGNMENT,
    tags: [
      ['e', a.job],
      ['p', a.agent],
      [TAG_GENERATION, String(a.generation)],
      ['status', 'revoked'],
      [TAG_CODE, a.code],
    ],
    content: '',
  }
}

/**
 * What a relay-signed assignment or revocation says about who holds its job (the relay reads back one it made):
 * for an assignment, its agent, generation and the request's author; none for a revocation.
 */
export function assignmentOf(e: NostrEvent): {
  job: string
  generation: number
  hold?: { requester: string; pubkey: string; generation: number }
} {
  const job = tagValue(e, 'e') ?? ''
  const pubkey = tagValue(e, 'p') ?? ''
  const generation = Number(tagValue(e, TAG_GENERATION))
  if (tagValue(e, 'status') !== 'assigned') return { job, generation }
  let requester = ''
  try {
    requester = String((JSON.parse(e.content) as { pubkey?: unknown }).pubkey ?? '')
  } catch {
    // not the relay's own assignment: no hold
  }
  return HEX64.test(requester) ? { job, generation, hold: { requester, pubkey, generation } } : { job, generation }
}

/**
 * The relay's terminal answer to a job nobody finished (NIP-90 feedback `error`, signed by the community's
 * key, stored: the requester's one final answer), with the generation it ends.
 */
export function terminalErrorTemplate(a: {
  job: string
  requester: string
  generation: number
  code: JobErrorCode
  text: string
}): EventTemplate {
  return {
    kind: KIND_JOB_FEEDBACK,
    tags: [
      ['status', 'error', a.text],
      ['e', a.job],
      ['p', a.requester],
      [TAG_GENERATION, String(a.generation)],
      [TAG_CODE, a.code],
    ],
    content: '',
  }
}
