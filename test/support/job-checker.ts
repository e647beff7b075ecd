// The claims a dispatched-jobs fault run is judged by (docs/jobs.md), over what everyone saw: each requester's
// calls and the raw events its connection received, what the relay stored, and what each worker printed about
// the work it did. Each check returns its violations, one readable line each; an empty list is the claim holding.
import type { JobChunk } from '../../src/client/index'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import type { WorkerLine } from './job-worker-process'

export const KIND_REQUEST = 5000
export const KIND_RESULT = 6000
export const KIND_FEEDBACK = 7000
export const KIND_CHUNK = 25_901

/** One job as its requester saw it through AgentClient.request(). */
export interface JobRecord {
  id: string
  input: string
  requester: string
  outcome?: { result: NostrEvent } | { error: { code: string; message: string; event?: NostrEvent } }
  /** the call's chunk stream (the client's view: in order, without duplicates) */
  chunks: JobChunk[]
}

export interface WorkerRecord {
  name: string
  pubkey: string
  lines: WorkerLine[]
}

export interface JobRunRecord {
  jobs: JobRecord[]
  /** by requester pubkey: every 6000, 7000 and 25901 its connection received, in arrival order */
  arrivals: Map<string, NostrEvent[]>
  stored: { requests: NostrEvent[]; results: NostrEvent[]; feedback: NostrEvent[] }
  workers: WorkerRecord[]
  /** `<worker>/<job>/<generation>`: what a worker held when it was killed or frozen */
  interrupted: Set<string>
  /**
   * jobs under way during a fault that may cost ephemeral chunks (a Redis restart closes subscriptions, a cut
   * tunnel drops a batch in flight): the call's chunk stream is checked for order, not for being whole, and the
   * arrival order on the connection is not checked (a subscription sent again gets its stored page first)
   */
  gapsAllowed?: ReadonlySet<string>
}

const tag = (e: NostrEvent, name: string) => e.tags.find((t) => t[0] === name)?.[1]
const generationOf = (e: NostrEvent) => Number(tag(e, 'generation') ?? Number.NaN)
const short = (id: string) => id.slice(0, 12)
const isFinal = (e: NostrEvent) =>
  e.kind === KIND_RESULT || (e.kind === KIND_FEEDBACK && tag(e, 'status') === 'error' && !e.tags.some((t) => t[0] === 'retry'))

function groupBy<T>(items: T[], key: (t: T) => string | undefined): Map<string, T[]> {
  const out = new Map<string, T[]>()
  for (const item of items) {
    const k = key(item)
    if (k === undefined) continue
    out.set(k, [...(out.get(k) ?? []), item])
  }
  return out
}

/** the jobs whose request the relay stored: those it answered OK true */
export const acceptedJobs = (run: JobRunRecord): JobRecord[] => {
  const stored = new Set(run.stored.requests.map((e) => e.id))
  return run.jobs.filter((j) => stored.has(j.id))
}

/** 1. one final answer per accepted job: the call settled with a result or a coded answer, and one final event came */
export function checkOneFinalAnswer(run: JobRunRecord): string[] {
  const out: string[] = []
  for (const job of acceptedJobs(run)) {
    if (job.outcome === undefined) out.push(`${short(job.id)}: no answer within the bound (hung)`)
    else if ('error' in job.outcome && job.outcome.error.event === undefined)
      out.push(`${short(job.id)}: ended by the client, not by an answer: ${job.outcome.error.code}: ${job.outcome.error.message}`)
    const finals = new Set((run.arrivals.get(job.requester) ?? []).filter((e) => tag(e, 'e') === job.id && isFinal(e)).map((e) => e.id))
    if (job.outcome !== undefined && finals.size !== 1) out.push(`${short(job.id)}: ${finals.size} final answers reached its requester`)
  }
  return out
}

/**
 * 2. nothing from a superseded assignment was accepted: at most one stored result per job; it is the one the
 * requester got; its author accepted (stored `processing`) at its generation; nothing shows a later generation
 * of the job (stored feedback, a worker that started it); and at the requester no chunk or answer arrived
 * under a generation lower than one already seen for the job, nor a chunk after its final answer (unless a
 * fault closed its subscriptions: one sent again delivers its stored page, then the live events held meanwhile)
 */
export function checkNoSupersededAccepted(run: JobRunRecord): string[] {
  const out: string[] = []
  const results = groupBy(run.stored.results, (e) => tag(e, 'e'))
  const feedback = groupBy(run.stored.feedback, (e) => tag(e, 'e'))
  const started = groupBy(
    run.workers.flatMap((w) => w.lines.filter((l) => l.step === 'started')),
    (l) => l.job,
  )
  for (const job of acceptedJobs(run)) {
    const stored = results.get(job.id) ?? []
    if (stored.length > 1) out.push(`${short(job.id)}: ${stored.length} results stored`)
    const result = stored[0]
    const got = job.outcome !== undefined && 'result' in job.outcome ? job.outcome.result : undefined
    if (got !== undefined && got.id !== result?.id)
      out.push(`${short(job.id)}: the requester's result ${short(got.id)} is not the stored one`)
    if (result === undefined) continue
    const g = generationOf(result)
    const accepted = (feedback.get(job.id) ?? []).some(
      (e) => tag(e, 'status') === 'processing' && e.pubkey === result.pubkey && generationOf(e) === g,
    )
    if (!accepted) out.push(`${short(job.id)}: result under generation ${g} from an agent with no stored "processing" at it`)
    const later = (feedback.get(job.id) ?? []).filter((e) => generationOf(e) > g)
    if (later.length > 0) out.push(`${short(job.id)}: result under generation ${g}, stored feedback under ${later.map(generationOf)}`)
    const startedLater = (started.get(job.id) ?? []).filter((l) => l.generation > g)
    if (startedLater.length > 0)
      out.push(`${short(job.id)}: result under generation ${g}, a worker started it under ${startedLater.map((l) => l.generation)}`)
  }
  for (const [requester, events] of run.arrivals) {
    const seen = events.filter((e) => !run.gapsAllowed?.has(tag(e, 'e') ?? ''))
    out.push(...arrivalOrderViolations(requester, seen))
  }
  return out
}

function arrivalOrderViolations(requester: string, events: NostrEvent[]): string[] {
  const out: string[] = []
  for (const [job, seen] of groupBy(events, (e) => tag(e, 'e'))) {
    let highest = 0
    let ended = false
    for (const e of seen) {
      const g = generationOf(e)
      if (e.kind === KIND_CHUNK && ended)
        out.push(`${short(job)}: a chunk of generation ${g} reached ${short(requester)} after the final answer`)
      // a chunk or result under a lower generation than one already seen came from a superseded assignee
      if (g < highest && (e.kind === KIND_CHUNK || e.kind === KIND_RESULT))
        out.push(
          `${short(job)}: ${e.kind === KIND_CHUNK ? 'a chunk' : 'the result'} of generation ${g} arrived after generation ${highest}`,
        )
      if (Number.isFinite(g)) highest = Math.max(highest, g)
      if (isFinal(e)) ended = true
    }
  }
  return out
}

/** 3. no job was completed twice by workers that stayed alive: a second completion needs a killed or frozen one */
export function checkNoDoubleWork(run: JobRunRecord): string[] {
  const out: string[] = []
  const completions = run.workers.flatMap((w) =>
    w.lines.filter((l) => l.step === 'completed').map((l) => ({ worker: w.name, job: l.job, generation: l.generation })),
  )
  for (const [job, done] of groupBy(completions, (c) => c.job)) {
    const unfaulted = done.filter((c) => !run.interrupted.has(`${c.worker}/${c.job}/${c.generation}`))
    if (unfaulted.length > 1)
      out.push(`${short(job)}: completed by ${unfaulted.map((c) => `${c.worker} (generation ${c.generation})`).join(' and ')}`)
  }
  // and every stored result is work a worker reports having completed under that generation
  const byPubkey = new Map(run.workers.map((w) => [w.pubkey, w]))
  for (const r of run.stored.results) {
    const w = byPubkey.get(r.pubkey)
    const done = w?.lines.some((l) => l.step === 'completed' && l.job === tag(r, 'e') && l.generation === generationOf(r))
    if (!done) out.push(`${short(tag(r, 'e') ?? '?')}: a result stored under generation ${generationOf(r)} that no worker completed`)
  }
  return out
}

/**
 * 4. chunks in order per generation at each requester: `seq` strictly increasing within a generation as they
 * arrived on its connection; and the call's stream holds the result's generation whole (seq 0, 1, 2) unless a
 * fault may have cost it chunks (gapsAllowed)
 */
export function checkChunkOrder(run: JobRunRecord): string[] {
  const out: string[] = []
  for (const [requester, events] of run.arrivals) {
    const chunks = events.filter((e) => e.kind === KIND_CHUNK)
    for (const [key, seen] of groupBy(chunks, (e) => `${tag(e, 'e')}/${tag(e, 'generation')}`)) {
      const seqs = seen.map((e) => Number(tag(e, 'seq')))
      if (seqs.some((s, i) => i > 0 && s <= seqs[i - 1]!))
        out.push(`${short(key)} at ${short(requester)}: seq arrived as ${seqs.join(',')}`)
    }
  }
  for (const job of acceptedJobs(run)) {
    if (job.outcome === undefined || !('result' in job.outcome) || run.gapsAllowed?.has(job.id)) continue
    const g = generationOf(job.outcome.result)
    const seqs = job.chunks.filter((c) => c.generation === g).map((c) => c.seq)
    if (seqs.join(',') !== '0,1,2') out.push(`${short(job.id)}: the call's stream of generation ${g} holds seq ${seqs.join(',')}`)
  }
  return out
}
