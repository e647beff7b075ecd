import { describe, expect, it } from 'vitest'
import { listenCache } from '../../../src/actors/community/direct-delivery'
import { type ConnView, SubscriptionIndex } from '../../../src/actors/community/subscription-index'
import { assignmentProbe, KIND_JOB_ASSIGNMENT } from '../../../src/protocols/jobs'

const conn = (id: string): ConnView => ({
  id,
  ip: '127.0.0.1',
  authed: new Set(),
  owners: new Map(),
  // open: the connection holds the subscription and its queue is not closed
  subs: new Set(['assignments']),
  lose: () => {},
  queue: { closed: false } as ConnView['queue'],
})
const RELAY = 'r'.repeat(64)
const AGENT = 'a'.repeat(64)

describe('whether a connection listens for what is sent to it alone', () => {
  it('matches each subscription once a second, and again after a REQ replaces it or for another agent', () => {
    const index = new SubscriptionIndex()
    const c = conn('c1')
    index.add(c, 'assignments', [{ kinds: [KIND_JOB_ASSIGNMENT], tags: { p: [AGENT] } }])
    const listens = listenCache()
    let probes = 0
    const ask = (agent: string, second: number) =>
      listens(index, 'c1', agent, second, () => {
        probes++
        return assignmentProbe(RELAY, agent, second)
      })
    expect(ask(AGENT, 100)).toBe(true)
    expect(ask(AGENT, 100)).toBe(true)
    expect(probes).toBe(1)
    expect(ask(AGENT, 101)).toBe(true)
    expect(probes).toBe(2)
    expect(ask('b'.repeat(64), 101)).toBe(false)
    expect(probes).toBe(3)
    // the same id sent again with another filter: a new subscription, matched again
    index.add(c, 'assignments', [{ kinds: [1] }])
    expect(ask(AGENT, 101)).toBe(false)
    expect(probes).toBe(4)
    index.remove('c1', 'assignments')
    expect(ask(AGENT, 101)).toBe(false)
    expect(listens(index, 'gone', AGENT, 101, () => assignmentProbe(RELAY, AGENT, 101))).toBe(false)
  })
})
