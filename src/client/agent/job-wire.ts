// The agent client's half of the dispatched-jobs wire format (docs/jobs.md): what an assignee sends (accept,
// progress, chunks, result, error) and a requester sends (the request, its cancellation), and how either reads
// what it receives. The relay's half, and every kind and tag name, is protocols/jobs.ts.
import { isHex64 } from '../../protocols/ids.js'
import {
  endsJob,
  isJobRequestKind,
  type JobErrorCode,
  jobReportOf,
  KIND_JOB_ASSIGNMENT,
  KIND_JOB_CHUNK,
  KIND_JOB_FEEDBACK,
  resultKindOf,
  TAG_CODE,
  TAG_DEADLINE_MS,
  TAG_DISPATCH,
  TAG_GENERATION,
  TAG_RETRY,
  TAG_SEQ,
} from '../../protocols/jobs.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { KIND_DELETION } from '../../protocols/nip01/kinds.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import type { WireFilter } from './wire-filter.js'

/** typed as a record so that a code added to JobErrorCode must be added here */
const JOB_ERROR_CODES: Record<JobErrorCode, true> = {
  failed: true,
  exhausted: true,
  deadline: true,
  cancelled: true,
  superseded: true,
  unavailable: true,
}
const toJobErrorCode = (v: string | undefined, otherwise: JobErrorCode): JobErrorCode =>
  v !== undefined && Object.hasOwn(JOB_ERROR_CODES, v) ? (v as JobErrorCode) : otherwise

const tagOf = (e: Pick<NostrEvent, 'tags'>, name: string): string[] | undefined => e.tags.find((t) => t[0] === name)
const tagValue = (e: Pick<NostrEvent, 'tags'>, name: string): string | undefined => tagOf(e, name)?.[1]
const GENERATION = /^[1-9][0-9]{0,14}$/

/** A job the relay hands this agent: the request travels whole in the assignment. */
export interface Assignment {
  status: 'assigned'
  job: string
  generation: number
  capability: string
  request: NostrEvent
}

/** The relay takes back the assignment of one generation. */
export interface Revocation {
  status: 'revoked'
  job: string
  generation: number
  code: JobErrorCode
}

/** A kind 25900 for `agent`, read; undefined when it is not one (the caller has checked its signer). */
export function parseAssignment(e: NostrEvent, agent: string): Assignment | Revocation | undefined {
  const job = tagValue(e, 'e')
  const generation = tagValue(e, TAG_GENERATION)
  if (e.kind !== KIND_JOB_ASSIGNMENT || tagValue(e, 'p') !== agent || !isHex64(job) || !GENERATION.test(generation ?? '')) return undefined
  const status = tagValue(e, 'status')
  if (status === 'revoked')
    return { status, job, generation: Number(generation), code: toJobErrorCode(tagValue(e, TAG_CODE), 'superseded') }
  const capability = tagValue(e, 'c')
  if (status !== 'assigned' || capability === undefined) return undefined
  // the relay verified the request when it was published, and signs the assignment that carries it
  const request = parseRequest(e.content)
  if (request === undefined || request.id !== job) return undefined
  return { status, job, generation: Number(generation), capability, request }
}

function parseRequest(json: string): NostrEvent | undefined {
  let r: unknown
  try {
    r = JSON.parse(json)
  } catch {
    return undefined
  }
  const e = r as NostrEvent
  const ok =
    typeof r === 'object' &&
    r !== null &&
    isHex64(e.id) &&
    isHex64(e.pubkey) &&
    isJobRequestKind(e.kind) &&
    Array.isArray(e.tags) &&
    e.tags.every((t) => Array.isArray(t) && t.every((v) => typeof v === 'string')) &&
    typeof e.content === 'string'
  return ok ? e : undefined
}

/** NIP-90: the input is the first `i` tag's value; a request without one carries it in its content. */
export const inputOf = (request: NostrEvent): string => tagValue(request, 'i') ?? request.content

/** Which job an assignee's event answers, and under which generation. */
export interface JobRef {
  id: string
  requester: string
  generation: number
}

const refTags = (job: JobRef): string[][] => [
  ['e', job.id],
  ['p', job.requester],
  [TAG_GENERATION, String(job.generation)],
]

/** NIP-90 feedback: `processing` accepts the assignment, `partial` reports progress, `error` ends or passes it on. */
export function feedbackTemplate(
  job: JobRef,
  status: ['processing'] | ['partial', string] | ['error', string],
  options: { retry?: boolean; content?: string } = {},
): EventTemplate {
  const tags = [['status', ...status], ...refTags(job)]
  if (options.retry) tags.push([TAG_RETRY])
  return { kind: KIND_JOB_FEEDBACK, tags, content: options.content ?? '' }
}

export const chunkTemplate = (job: JobRef, seq: number, data: string): EventTemplate => ({
  kind: KIND_JOB_CHUNK,
  tags: [...refTags(job), [TAG_SEQ, String(seq)]],
  content: data,
})

export const resultTemplate = (job: JobRef, requestKind: number, output: string): EventTemplate => ({
  kind: resultKindOf(requestKind),
  tags: refTags(job),
  content: output,
})

/** A dispatched request: one capability, the input as NIP-90 text, and the relay's deadline when asked. */
export function requestTemplate(
  capability: string,
  input: string,
  kind: number,
  deadlineMs?: number,
  extra: string[][] = [],
): EventTemplate {
  const tags = [['c', capability], [TAG_DISPATCH], ['i', input, 'text']]
  if (deadlineMs !== undefined) tags.push([TAG_DEADLINE_MS, String(deadlineMs)])
  return { kind, tags: [...tags, ...extra], content: '' }
}

/** NIP-09: the requester deletes its request; the relay cancels the job. */
export const cancellationTemplate = (job: string, requestKind: number): EventTemplate => ({
  kind: KIND_DELETION,
  tags: [
    ['e', job],
    ['k', String(requestKind)],
  ],
  content: '',
})

/** what reaches an agent's connection for it: assignments and revocations */
export const assignmentFilter = (agent: string): WireFilter => ({ kinds: [KIND_JOB_ASSIGNMENT], '#p': [agent] })

/** what a requester hears of its job: feedback, the result and the chunks */
export const answerFilter = (job: string, requestKind: number): WireFilter => ({
  kinds: [KIND_JOB_FEEDBACK, resultKindOf(requestKind), KIND_JOB_CHUNK],
  '#e': [job],
})

/** What one event tells the requester of `job`. */
export type JobAnswer =
  | { what: 'chunk'; generation: number; seq: number; data: string }
  | { what: 'result' }
  | { what: 'error'; code: JobErrorCode; message: string }

/**
 * A chunk, or the job's final answer: its result, an agent's error without `retry`, or the relay's terminal
 * error (signed by `relaySelf` when the relay advertises it) with its code. Anything else is undefined.
 */
export function answerOf(e: NostrEvent, job: string, requestKind: number, relaySelf: string | undefined): JobAnswer | undefined {
  const parsed = jobReportOf(e)
  if (!parsed.ok || parsed.value === undefined || parsed.value.job !== job) return undefined
  const report = parsed.value
  if (report.what === 'chunk') return { what: 'chunk', generation: report.generation!, seq: report.seq!, data: e.content }
  if (!endsJob(report)) return undefined
  if (report.what === 'result') return e.kind === resultKindOf(requestKind) ? { what: 'result' } : undefined
  const fromRelay = relaySelf === undefined ? tagOf(e, TAG_CODE) !== undefined : e.pubkey === relaySelf
  const code = fromRelay ? toJobErrorCode(tagValue(e, TAG_CODE), 'failed') : 'failed'
  const message = tagOf(e, 'status')?.[2] || e.content || `the job ended: ${code}`
  return { what: 'error', code, message }
}
