import { describe, expect, it } from 'vitest'
import { type AgentCandidate, chooseAgent } from '../../../src/actors/jobs/agent-choice'

const agent = (conn: string, extra: Partial<AgentCandidate> = {}): AgentCandidate => ({
  conn,
  pubkey: `pk-${conn}`,
  concurrency: 1,
  ...extra,
})
const choice = (held: Record<string, number> = {}, last: Record<string, number> = {}) => ({
  held: new Map(Object.entries(held)),
  lastAssignedMs: new Map(Object.entries(last)),
})

describe('choosing the agent for the next job', () => {
  it('takes the least loaded by jobs held over concurrency, then by announced load', () => {
    const agents = [agent('a', { concurrency: 4 }), agent('b', { concurrency: 2 }), agent('c', { load: 0.1 }), agent('d', { load: 0.9 })]
    expect(chooseAgent(agents, choice({ a: 1, b: 0 }), new Set())?.conn).toBe('b')
    expect(chooseAgent(agents, choice({ a: 1, b: 1 }), new Set())?.conn).toBe('c')
    expect(chooseAgent(agents, choice({ a: 1, b: 1, c: 1 }), new Set())?.conn).toBe('d')
    expect(chooseAgent(agents, choice({ a: 1, b: 1, c: 1, d: 1 }), new Set())?.conn).toBe('a')
  })

  it('skips agents at their concurrency and answers undefined when none has room', () => {
    const agents = [agent('a'), agent('b', { concurrency: 2 })]
    expect(chooseAgent(agents, choice({ a: 1, b: 1 }), new Set())?.conn).toBe('b')
    expect(chooseAgent(agents, choice({ a: 1, b: 2 }), new Set())).toBeUndefined()
  })

  it('among equals, picks the one that got a job longest ago (never assigned first)', () => {
    const agents = [agent('a'), agent('b'), agent('c')]
    expect(chooseAgent(agents, choice({}, { a: 10, b: 5, c: 7 }), new Set())?.conn).toBe('b')
    expect(chooseAgent(agents, choice({}, { a: 10, c: 7 }), new Set())?.conn).toBe('b')
  })

  it('never picks an excluded pubkey', () => {
    const agents = [agent('a'), agent('b')]
    expect(chooseAgent(agents, choice({}, { b: 1 }), new Set(['pk-a']))?.conn).toBe('b')
    expect(chooseAgent(agents, choice(), new Set(['pk-a', 'pk-b']))).toBeUndefined()
  })
})
