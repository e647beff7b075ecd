import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import {
  checkChunkOrder,
  checkNoDoubleWork,
  checkNoSupersededAccepted,
  checkOneFinalAnswer,
  type JobRecord,
  type JobRunRecord,
  KIND_CHUNK,
  KIND_FEEDBACK,
  KIND_REQUEST,
  KIND_RESULT,
} from '../support/job-checker'

/**
 * The checker of test/faults/jobs.test.ts against runs written by hand: a clean run passes every claim, and
 * each fault the relay must never commit is named by the claim it breaks. A checker that cannot fail proves nothing.
 */
const JOB = 'a'.repeat(64)
const REQUESTER = 'b'.repeat(64)
const W1 = '1'.repeat(64)
const W2 = '2'.repeat(64)
let counter = 0
const ev = (kind: number, pubkey: string, tags: string[][]): NostrEvent => ({
  id: (++counter).toString(16).padStart(64, '0'),
  kind,
  pubkey,
  tags,
  content: '',
  created_at: 0,
  sig: '',
})
const about = (generation: number, more: string[][] = []) => [['e', JOB], ['p', REQUESTER], ['generation', String(generation)], ...more]
const processing = (pubkey: string, g: number) => ev(KIND_FEEDBACK, pubkey, about(g, [['status', 'processing']]))
const chunk = (pubkey: string, g: number, seq: number) => ev(KIND_CHUNK, pubkey, about(g, [['seq', String(seq)]]))
const result = (pubkey: string, g: number) => ev(KIND_RESULT, pubkey, about(g))

/** W1 took generation 1 and was killed; W2 finished generation 2 */
function cleanRun(): JobRunRecord {
  const request = ev(KIND_REQUEST, REQUESTER, [])
  request.id = JOB
  const done = result(W2, 2)
  const job: JobRecord = {
    id: JOB,
    input: 'x',
    requester: REQUESTER,
    outcome: { result: done },
    chunks: [0, 1, 2].map((seq) => ({ data: '', seq, generation: 2 })),
  }
  const p1 = processing(W1, 1)
  const p2 = processing(W2, 2)
  return {
    jobs: [job],
    arrivals: new Map([[REQUESTER, [p1, chunk(W1, 1, 0), p2, chunk(W2, 2, 0), chunk(W2, 2, 1), chunk(W2, 2, 2), done]]]),
    stored: { requests: [request], results: [done], feedback: [p1, p2] },
    workers: [
      { name: 'w1', pubkey: W1, lines: [{ step: 'started', job: JOB, generation: 1, atMs: 0 }] },
      {
        name: 'w2',
        pubkey: W2,
        lines: [
          { step: 'started', job: JOB, generation: 2, atMs: 1 },
          { step: 'completed', job: JOB, generation: 2, atMs: 2 },
        ],
      },
    ],
    interrupted: new Set([`w1/${JOB}/1`]),
  }
}

describe('the jobs fault checker', () => {
  it('passes a run in which a killed worker’s job was finished by another under the next generation', () => {
    const run = cleanRun()
    expect(checkOneFinalAnswer(run)).toEqual([])
    expect(checkNoSupersededAccepted(run)).toEqual([])
    expect(checkNoDoubleWork(run)).toEqual([])
    expect(checkChunkOrder(run)).toEqual([])
  })

  it('names a job that never got an answer, and one that got two', () => {
    const hung = cleanRun()
    hung.jobs[0]!.outcome = undefined
    expect(checkOneFinalAnswer(hung)).toEqual([expect.stringContaining('hung')])
    const twice = cleanRun()
    twice.arrivals.get(REQUESTER)!.push(ev(KIND_FEEDBACK, W1, about(1, [['status', 'error', 'late']])))
    expect(checkOneFinalAnswer(twice)).toEqual([expect.stringContaining('2 final answers')])
  })

  it('names a stored result from a superseded generation, a second stored result, and a stale chunk relayed', () => {
    const stale = cleanRun()
    const old = result(W1, 1)
    stale.stored.results = [old]
    stale.jobs[0]!.outcome = { result: old }
    stale.stored.feedback.push(processing(W1, 1))
    expect(checkNoSupersededAccepted(stale).join('\n')).toContain('stored feedback under 2')
    const two = cleanRun()
    two.stored.results.push(result(W1, 1))
    expect(checkNoSupersededAccepted(two).join('\n')).toContain('2 results stored')
    const relayed = cleanRun()
    relayed.arrivals.get(REQUESTER)!.splice(3, 0, chunk(W1, 1, 1))
    expect(checkNoSupersededAccepted(relayed)).toEqual([expect.stringContaining('a chunk of generation 1 arrived after generation 2')])
  })

  it('names a job completed by two workers that stayed alive, and chunks out of order within a generation', () => {
    const double = cleanRun()
    double.interrupted.clear()
    double.workers[0]!.lines.push({ step: 'completed', job: JOB, generation: 1, atMs: 3 })
    expect(checkNoDoubleWork(double)).toEqual([expect.stringContaining('completed by w1 (generation 1) and w2 (generation 2)')])
    const swapped = cleanRun()
    const arrived = swapped.arrivals.get(REQUESTER)!
    ;[arrived[4], arrived[5]] = [arrived[5]!, arrived[4]!]
    expect(checkChunkOrder(swapped)).toEqual([expect.stringContaining('seq arrived as 0,2,1')])
  })

  it('lets a job under way during a fault miss chunks and get its stored page first, and still checks the rest', () => {
    const gap = cleanRun()
    gap.jobs[0]!.chunks.splice(1, 1)
    // its subscription sent again: the stored result first, then the live chunk held meanwhile
    const arrived = gap.arrivals.get(REQUESTER)!
    arrived.push(arrived.splice(5, 1)[0]!)
    expect(checkChunkOrder(gap)).toEqual([expect.stringContaining('holds seq 0,2')])
    expect(checkNoSupersededAccepted(gap)).toEqual([expect.stringContaining('after the final answer')])
    gap.gapsAllowed = new Set([JOB])
    expect(checkChunkOrder(gap)).toEqual([])
    expect(checkNoSupersededAccepted(gap)).toEqual([])
    gap.stored.results.push(result(W1, 1))
    expect(checkNoSupersededAccepted(gap).join('\n')).toContain('2 results stored')
  })
})
