import { describe, expect, it } from 'vitest'
import {
  assignmentTemplate,
  endsJob,
  isDispatchRequest,
  jobReportOf,
  KIND_JOB_CHUNK,
  parseJobRequest,
  resultKindOf,
  terminalErrorTemplate,
} from '../../src/protocols/jobs'
import type { NostrEvent } from '../../src/protocols/nip01/event'

const JOB = 'a'.repeat(64)
const event = (kind: number, tags: string[][], content = ''): NostrEvent => ({
  id: 'b'.repeat(64),
  pubkey: 'c'.repeat(64),
  created_at: 1,
  kind,
  tags,
  content,
  sig: 'd'.repeat(128),
})

describe('a dispatched job request', () => {
  it('is a kind 5000-5999 with the dispatch tag; without it the request is plain NIP-90', () => {
    expect(isDispatchRequest(event(5050, [['c', 'x'], ['dispatch']]))).toBe(true)
    expect(isDispatchRequest(event(5050, [['c', 'x']]))).toBe(false)
    expect(isDispatchRequest(event(6050, [['dispatch']]))).toBe(false)
    expect(isDispatchRequest(event(4999, [['dispatch']]))).toBe(false)
  })

  it.each([
    [[['c', 'echo'], ['dispatch']], { capability: 'echo', deadlineMs: undefined }],
    [[['c', 'a.b:c-d_e'], ['dispatch'], ['deadline_ms', '1000']], { capability: 'a.b:c-d_e', deadlineMs: 1000 }],
    [[['c', 'x'], ['dispatch'], ['deadline_ms', '60000']], { capability: 'x', deadlineMs: 60_000 }],
  ])('parses %j', (tags, want) => {
    const parsed = parseJobRequest(event(5050, tags), 60_000)
    expect(parsed).toEqual({ ok: true, value: { id: 'b'.repeat(64), requester: 'c'.repeat(64), kind: 5050, ...want } })
  })

  it.each([
    ['no capability', [['dispatch']]],
    ['two capabilities', [['c', 'a'], ['c', 'b'], ['dispatch']]],
    ['an empty capability', [['c', ''], ['dispatch']]],
    ['a capability of 65 characters', [['c', 'x'.repeat(65)], ['dispatch']]],
    ['a capability with a space', [['c', 'a b'], ['dispatch']]],
    ['a deadline of 0', [['c', 'x'], ['dispatch'], ['deadline_ms', '0']]],
    ['a deadline past the bound', [['c', 'x'], ['dispatch'], ['deadline_ms', '60001']]],
    ['a deadline that is not a number', [['c', 'x'], ['dispatch'], ['deadline_ms', '1e3']]],
  ])('refuses %s with invalid:', (_what, tags) => {
    const parsed = parseJobRequest(event(5050, tags), 60_000)
    expect(parsed.ok).toBe(false)
    if (!parsed.ok) expect(parsed.error.startsWith('invalid: ')).toBe(true)
  })
})

describe('what an assignee sends about a job', () => {
  it.each([
    [
      'processing feedback',
      event(7000, [
        ['e', JOB],
        ['status', 'processing'],
        ['generation', '3'],
      ]),
      { what: 'processing', generation: 3, retry: false },
      false,
    ],
    [
      'partial feedback',
      event(7000, [
        ['e', JOB],
        ['status', 'partial'],
        ['generation', '1'],
      ]),
      { what: 'partial', generation: 1, retry: false },
      false,
    ],
    [
      'a final error',
      event(7000, [
        ['e', JOB],
        ['status', 'error'],
        ['generation', '1'],
      ]),
      { what: 'error', generation: 1, retry: false },
      true,
    ],
    [
      'a retryable error',
      event(7000, [['e', JOB], ['status', 'error'], ['retry'], ['generation', '1']]),
      { what: 'error', generation: 1, retry: true },
      false,
    ],
    [
      'a result',
      event(resultKindOf(5050), [
        ['e', JOB],
        ['generation', '2'],
      ]),
      { what: 'result', generation: 2, retry: false },
      true,
    ],
    ['a result without generation', event(6001, [['e', JOB]]), { what: 'result', generation: undefined, retry: false }, true],
    [
      'a chunk',
      event(KIND_JOB_CHUNK, [
        ['e', JOB],
        ['generation', '1'],
        ['seq', '0'],
      ]),
      { what: 'chunk', generation: 1, retry: false, seq: 0 },
      false,
    ],
  ])('reads %s', (_what, e, want, ends) => {
    const r = jobReportOf(e)
    expect(r).toEqual({ ok: true, value: { job: JOB, ...want } })
    if (r.ok && r.value) expect(endsJob(r.value)).toBe(ends)
  })

  it('says nothing of other kinds, or of feedback without a job id', () => {
    expect(jobReportOf(event(1, [['e', JOB]]))).toEqual({ ok: true, value: undefined })
    expect(jobReportOf(event(7000, [['status', 'processing']]))).toEqual({ ok: true, value: undefined })
  })

  it.each([
    [
      'a generation of 0',
      event(7000, [
        ['e', JOB],
        ['generation', '0'],
      ]),
    ],
    [
      'a generation that is not a number',
      event(6050, [
        ['e', JOB],
        ['generation', 'x'],
      ]),
    ],
    [
      'a chunk without a seq',
      event(KIND_JOB_CHUNK, [
        ['e', JOB],
        ['generation', '1'],
      ]),
    ],
    [
      'a chunk without a generation',
      event(KIND_JOB_CHUNK, [
        ['e', JOB],
        ['seq', '0'],
      ]),
    ],
    [
      'a chunk without a job',
      event(KIND_JOB_CHUNK, [
        ['generation', '1'],
        ['seq', '0'],
      ]),
    ],
  ])('refuses %s with invalid:', (_what, e) => {
    const r = jobReportOf(e)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.error.startsWith('invalid: ')).toBe(true)
  })
})

describe('what the relay signs', () => {
  it('carries the request in the assignment and the generation in every template', () => {
    const t = assignmentTemplate({
      job: JOB,
      agent: 'p'.repeat(64),
      capability: 'echo',
      generation: 4,
      acceptMs: 5000,
      requestRaw: '{"x":1}',
    })
    expect(t.content).toBe('{"x":1}')
    expect(t.tags).toContainEqual(['generation', '4'])
    expect(t.tags).toContainEqual(['status', 'assigned'])
    const e = terminalErrorTemplate({ job: JOB, requester: 'r'.repeat(64), generation: 2, code: 'exhausted', text: 'no' })
    expect(e.kind).toBe(7000)
    expect(e.tags).toContainEqual(['code', 'exhausted'])
    expect(e.tags).toContainEqual(['status', 'error', 'no'])
  })
})
