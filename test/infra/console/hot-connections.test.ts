import { describe, expect, it } from 'vitest'
import { HotConnections, type MeteredConnection, mergeHot } from '../../../src/infra/console/hot-connections'
import { TrafficMeter } from '../../../src/infra/ws/traffic-meter'
import { HOT_TOP_K, type HotConnectionRow } from '../../../src/protocols/console'

const conn = (id: string, community = 'c1', openedAtMs = 0): MeteredConnection => ({
  id,
  community,
  ip: `10.0.0.${id}`,
  meter: new TrafficMeter(openedAtMs),
  authed: new Set([`pk${id}`]),
  subs: new Set(['a', 'b']),
})

describe('a connection traffic meter', () => {
  it('gives rates over the readings it keeps, up to the last 10 s', () => {
    const m = new TrafficMeter(0)
    const rates = { inFramesPerSecond: 0, inBytesPerSecond: 0, outBytesPerSecond: 0 }
    // 5 frames of 100 bytes a second for 20 s, then silence
    for (let s = 1; s <= 20; s++) {
      for (let f = 0; f < 5; f++) m.frameIn(100)
      m.bytesOut(1000)
      m.read(s * 1000)
    }
    expect(m.rates(rates)).toEqual({ inFramesPerSecond: 5, inBytesPerSecond: 500, outBytesPerSecond: 1000 })
    for (let s = 21; s <= 25; s++) m.read(s * 1000)
    // five silent seconds of the ten: half the rate
    expect(m.rates(rates).inFramesPerSecond).toBe(2.5)
    for (let s = 26; s <= 30; s++) m.read(s * 1000)
    expect(m.rates(rates).inFramesPerSecond).toBe(0)
  })

  it('counts a connection from its opening, so one flooding in its first second has a rate', () => {
    const m = new TrafficMeter(1000)
    for (let f = 0; f < 50; f++) m.frameIn(10)
    m.read(1500)
    expect(m.rates({ inFramesPerSecond: 0, inBytesPerSecond: 0, outBytesPerSecond: 0 }).inFramesPerSecond).toBe(100)
  })
})

describe('the hot connections of a node', () => {
  it('keeps the top 20 of each ranking, busiest first, with pubkeys, ip, community and subscriptions', () => {
    const hot = new HotConnections({ node: 'n1', agentStateOf: (_c, id) => (id === '7' ? 'SUSPECT' : undefined) })
    const conns = Array.from({ length: 50 }, (_, i) => conn(String(i)))
    // connection i sends i frames a second of (50 - i) × 10 bytes: the rankings disagree
    for (const [i, c] of conns.entries()) for (let f = 0; f < i; f++) c.meter.frameIn((50 - i) * 10)
    hot.sample(conns, 1000)
    const byFrames = hot.rows('inFramesPerSecond')
    expect(byFrames).toHaveLength(HOT_TOP_K)
    expect(byFrames.map((r) => r.conn)).toEqual(Array.from({ length: 20 }, (_, k) => String(49 - k)))
    expect(byFrames[0]).toMatchObject({ node: 'n1', community: 'c1', pubkeys: ['pk49'], ip: '10.0.0.49', subscriptions: 2 })
    // bytes: i × (50 - i) × 10 is largest at i = 25
    expect(hot.rows('inBytesPerSecond')[0]!.conn).toBe('25')
    expect(hot.rows('outBytesPerSecond')).toEqual([])
    expect(hot.union().find((r) => r.conn === '7')).toBeUndefined()
    expect(hot.rows('inBytesPerSecond').find((r) => r.conn === '24')?.agentState).toBeUndefined()
    expect(hot.communities().get('c1')).toEqual({ connections: 50, subscriptions: 100 })
  })

  it('names the agent state of a hot agent connection', () => {
    const hot = new HotConnections({ node: 'n1', agentStateOf: (_c, id) => (id === '1' ? 'SUSPECT' : undefined) })
    const c = conn('1')
    c.meter.frameIn(10)
    hot.sample([c], 1000)
    expect(hot.rows('inFramesPerSecond')[0]?.agentState).toBe('SUSPECT')
  })

  it('finds the top 20 of 10,000 connections whichever order they come in', () => {
    const hot = new HotConnections({ node: 'n1' })
    const conns = Array.from({ length: 10_000 }, (_, i) => conn(String(i)))
    const order = conns.map((c, i) => ({ c, busy: (i * 7919) % 10_000 }))
    for (const { c, busy } of order) c.meter.bytesOut(busy + 1)
    hot.sample(
      order.map((o) => o.c),
      1000,
    )
    const expected = [...order]
      .sort((a, b) => b.busy - a.busy)
      .slice(0, 20)
      .map((o) => o.c.id)
    expect(hot.rows('outBytesPerSecond').map((r) => r.conn)).toEqual(expected)
  })

  it('merges several nodes into the cluster top 20', () => {
    const row = (node: string, n: number): HotConnectionRow => ({
      node,
      conn: String(n),
      community: 'c1',
      pubkeys: [],
      ip: '',
      subscriptions: 0,
      inFramesPerSecond: n,
      inBytesPerSecond: 0,
      outBytesPerSecond: 0,
    })
    const a = Array.from({ length: 20 }, (_, i) => row('a', i * 2))
    const b = Array.from({ length: 20 }, (_, i) => row('b', i * 2 + 1))
    const merged = mergeHot([...a, ...b], 'inFramesPerSecond')
    expect(merged.map((r) => r.inFramesPerSecond)).toEqual(Array.from({ length: 20 }, (_, k) => 39 - k))
    expect(mergeHot([...a, ...b], 'inBytesPerSecond')).toEqual([])
  })
})
