import { describe, expect, it } from 'vitest'
import { createBlockedIps } from '../../../src/infra/store/blocked-ips'
import type { CommunityStore, ListedEntry } from '../../../src/infra/store/community-store'

/** The block lists as a store holds them, and every read of them: a fake of the one method the cache uses. */
function listsStore(initial: Record<string, string[]>) {
  const lists = new Map(Object.entries(initial))
  const reads: string[] = []
  let failing = false
  let gate: { held: Promise<void>; open: () => void } | undefined
  const store: Pick<CommunityStore, 'listBlockedIps'> = {
    async listBlockedIps(community): Promise<ListedEntry[]> {
      reads.push(community)
      if (failing) throw new Error('store unavailable')
      // the list as it is when the read starts, answered once the test opens the gate (when it holds reads)
      const answer = (lists.get(community) ?? []).map((value) => ({ value, reason: '' }))
      await gate?.held
      return answer
    },
  }
  return {
    store,
    reads,
    set: (community: string, values: string[]) => void lists.set(community, values),
    fail(on: boolean) {
      failing = on
    },
    hold: () => {
      let open = () => {}
      const held = new Promise<void>((resolve) => {
        open = resolve
      })
      gate = { held, open }
    },
    release: () => {
      gate?.open()
      gate = undefined
    },
  }
}

function clock() {
  let now = 1_000
  return {
    nowMs: () => now,
    advance(ms: number) {
      now += ms
    },
  }
}

describe("a node's copy of the communities' blocked IPs", () => {
  it('reads a community list once for many checks within the TTL, and matches addresses and CIDR ranges', async () => {
    const s = listsStore({ hive: ['203.0.113.7', '198.51.100.0/24', '2001:db8::/64'], other: [] })
    const blocked = createBlockedIps(s.store, { ttlMs: 5_000, ...clock() })
    const answers = []
    for (const ip of ['203.0.113.7', '203.0.113.8', '198.51.100.200', '2001:db8::1', '2001:db8:0:1::1'])
      answers.push(await blocked.isBlocked('hive', ip))
    expect(answers).toEqual([true, false, true, true, false])
    expect(await blocked.isBlocked('other', '203.0.113.7')).toBe(false)
    expect(s.reads).toEqual(['hive', 'other'])
  })

  it('shares one read among the checks that arrive while it is in flight', async () => {
    const s = listsStore({ hive: ['203.0.113.7'] })
    const blocked = createBlockedIps(s.store, { ttlMs: 5_000, ...clock() })
    const answers = await Promise.all(Array.from({ length: 20 }, () => blocked.isBlocked('hive', '203.0.113.7')))
    expect(answers).toEqual(Array(20).fill(true))
    expect(s.reads).toEqual(['hive'])
  })

  it('reads the list again after an invalidation, and not before', async () => {
    const s = listsStore({ hive: [] })
    const blocked = createBlockedIps(s.store, { ttlMs: 60_000, ...clock() })
    expect(await blocked.isBlocked('hive', '203.0.113.7')).toBe(false)
    s.set('hive', ['203.0.113.7'])
    expect(await blocked.isBlocked('hive', '203.0.113.7')).toBe(false)
    blocked.invalidate('hive')
    expect(await blocked.isBlocked('hive', '203.0.113.7')).toBe(true)
    expect(s.reads).toEqual(['hive', 'hive'])
  })

  it('reads the list again once the TTL has passed since the read started: what bounds a lost invalidation', async () => {
    const s = listsStore({ hive: [] })
    const c = clock()
    const blocked = createBlockedIps(s.store, { ttlMs: 5_000, ...c })
    expect(await blocked.isBlocked('hive', '203.0.113.7')).toBe(false)
    s.set('hive', ['203.0.113.7'])
    c.advance(4_999)
    expect(await blocked.isBlocked('hive', '203.0.113.7')).toBe(false)
    c.advance(1)
    expect(await blocked.isBlocked('hive', '203.0.113.7')).toBe(true)
    expect(s.reads).toHaveLength(2)
  })

  it('reads the list for every check with a TTL of 0', async () => {
    const s = listsStore({ hive: ['203.0.113.7'] })
    const blocked = createBlockedIps(s.store, { ttlMs: 0, ...clock() })
    for (let i = 0; i < 3; i++) expect(await blocked.isBlocked('hive', '203.0.113.7')).toBe(true)
    expect(s.reads).toHaveLength(3)
  })

  it('rejects a check whose read failed and keeps nothing of it: the next check reads again', async () => {
    const s = listsStore({ hive: ['203.0.113.7'] })
    const blocked = createBlockedIps(s.store, { ttlMs: 60_000, ...clock() })
    s.fail(true)
    await expect(blocked.isBlocked('hive', '203.0.113.7')).rejects.toThrow(/unavailable/)
    s.fail(false)
    expect(await blocked.isBlocked('hive', '203.0.113.7')).toBe(true)
    expect(s.reads).toHaveLength(2)
  })

  it('does not keep a read that was in flight when the list changed: the checks after the change read it again', async () => {
    const s = listsStore({ hive: [] })
    const blocked = createBlockedIps(s.store, { ttlMs: 60_000, ...clock() })
    s.hold()
    const before = blocked.isBlocked('hive', '203.0.113.7')
    s.set('hive', ['203.0.113.7'])
    blocked.invalidate('hive')
    s.release()
    // the check that shared the old read gets its answer; the next one is not served from it
    expect(await before).toBe(false)
    expect(await blocked.isBlocked('hive', '203.0.113.7')).toBe(true)
    expect(s.reads).toEqual(['hive', 'hive'])
  })
})
