import { describe, expect, it } from 'vitest'
import { createGroupCommit } from '../../../src/infra/store/group-commit'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function recorder(opts: { maxItems: number; maxDelayMs: number; commitMs?: number; failOn?: number }) {
  const batches: number[][] = []
  let active = 0
  let overlapped = false
  const gc = createGroupCommit<number, string>({
    ...opts,
    commit: async (batch) => {
      overlapped ||= active > 0
      active++
      if (opts.commitMs) await sleep(opts.commitMs)
      active--
      if (opts.failOn !== undefined && batch.includes(opts.failOn)) throw new Error('disk full')
      batches.push([...batch])
      return batch.map((n) => `ok ${n}`)
    },
    toError: (cause) => new Error('store down', { cause }),
  })
  return { gc, batches, overlapped: () => overlapped }
}

describe('group commit', () => {
  it('commits as soon as maxItems are queued, without waiting for the delay', async () => {
    const { gc, batches } = recorder({ maxItems: 3, maxDelayMs: 60_000 })
    expect(await Promise.all([1, 2, 3].map((n) => gc.submit(n)))).toEqual(['ok 1', 'ok 2', 'ok 3'])
    expect(batches).toEqual([[1, 2, 3]])
  })

  it('commits a partial batch after maxDelayMs, and on the next turn when the delay is 0', async () => {
    for (const maxDelayMs of [0, 5]) {
      const { gc, batches } = recorder({ maxItems: 100, maxDelayMs })
      await Promise.all([1, 2].map((n) => gc.submit(n)))
      expect(batches).toEqual([[1, 2]])
    }
  })

  it('commits on the next turn once nothing more arrives, however long maxDelayMs is', async () => {
    const { gc, batches } = recorder({ maxItems: 100, maxDelayMs: 60_000 })
    expect(await gc.submit(1)).toBe('ok 1')
    expect(batches).toEqual([[1]])
  })

  it('keeps gathering while writes arrive turn after turn, so they share one commit', async () => {
    const { gc, batches } = recorder({ maxItems: 100, maxDelayMs: 60_000 })
    const results: Promise<string>[] = []
    for (let i = 1; i <= 20; i++) {
      results.push(gc.submit(i))
      await new Promise((r) => setImmediate(r))
    }
    await Promise.all(results)
    expect(batches).toEqual([Array.from({ length: 20 }, (_, i) => i + 1)])
  })

  it('commits one batch at a time; what arrives meanwhile shares the next commit', async () => {
    const { gc, batches, overlapped } = recorder({ maxItems: 2, maxDelayMs: 0, commitMs: 10 })
    const first = [1, 2].map((n) => gc.submit(n))
    const later = [3, 4, 5].map((n) => gc.submit(n))
    await Promise.all([...first, ...later])
    expect(batches).toEqual([[1, 2], [3, 4], [5]])
    expect(overlapped()).toBe(false)
    expect(gc.stats()).toEqual({ transactions: 3, items: 5 })
  })

  it('rejects every item of a failed batch and only that batch', async () => {
    const { gc, batches } = recorder({ maxItems: 2, maxDelayMs: 0, failOn: 2 })
    const settled = await Promise.allSettled([1, 2, 3].map((n) => gc.submit(n)))
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'fulfilled'])
    expect((settled[0] as PromiseRejectedResult).reason.cause.message).toBe('disk full')
    expect(batches).toEqual([[3]])
    expect(gc.stats()).toEqual({ transactions: 1, items: 1 })
  })

  it('drain() commits what is queued and waits for the commit in flight', async () => {
    const { gc, batches } = recorder({ maxItems: 100, maxDelayMs: 60_000, commitMs: 5 })
    const pending = [1, 2].map((n) => gc.submit(n))
    await gc.drain()
    expect(batches).toEqual([[1, 2]])
    expect(await Promise.all(pending)).toEqual(['ok 1', 'ok 2'])
  })

  it('picks up a submit made by a resumed submitter while the last batch was finishing', async () => {
    const { gc, batches } = recorder({ maxItems: 100, maxDelayMs: 0 })
    const chained = gc.submit(1).then(() => gc.submit(2))
    expect(await chained).toBe('ok 2')
    expect(batches).toEqual([[1], [2]])
  })

  it('with maxInFlight 2 commits batch N+1 while batch N is in flight, and each submitter hears its own batch', async () => {
    const releases: (() => void)[] = []
    let active = 0
    let most = 0
    const gc = createGroupCommit<number, string>({
      maxItems: 2,
      maxDelayMs: 0,
      maxInFlight: 2,
      commit: async (batch) => {
        active++
        most = Math.max(most, active)
        await new Promise<void>((r) => releases.push(r))
        active--
        return batch.map((n) => `ok ${n}`)
      },
      toError: (cause) => new Error('store down', { cause }),
    })
    const first = [1, 2].map((n) => gc.submit(n))
    const second = [3, 4].map((n) => gc.submit(n))
    const third = gc.submit(5)
    await expect.poll(() => releases.length).toBe(2)
    // the pipeline is full: the third batch waits for one to finish
    releases[1]!()
    expect(await Promise.all(second)).toEqual(['ok 3', 'ok 4'])
    await expect.poll(() => releases.length).toBe(3)
    const drained = gc.drain()
    releases[0]!()
    releases[2]!()
    expect(await Promise.all([...first, third])).toEqual(['ok 1', 'ok 2', 'ok 5'])
    await drained
    expect(most).toBe(2)
    expect(gc.stats()).toEqual({ transactions: 3, items: 5 })
  })
  it('with maxInFlight 2 gathers what arrives while a batch is in flight into one batch, even when arrivals pause', async () => {
    const releases: (() => void)[] = []
    const batches: number[][] = []
    const gc = createGroupCommit<number, string>({
      maxItems: 100,
      // longer than the test: the gathered batch must start when the batch in flight finishes, not at the delay
      maxDelayMs: 60_000,
      maxInFlight: 2,
      commit: async (batch) => {
        batches.push([...batch])
        await new Promise<void>((r) => releases.push(r))
        return batch.map((n) => `ok ${n}`)
      },
      toError: (cause) => new Error('store down', { cause }),
    })
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
    }
    const first = gc.submit(1)
    await expect.poll(() => releases.length).toBe(1)
    const later: Promise<string>[] = []
    for (const n of [2, 3, 4]) {
      later.push(gc.submit(n))
      // arrivals stop growing for several turns: without a batch in flight this would commit [2] alone
      await turns(5)
    }
    expect(batches).toEqual([[1]])
    releases[0]!()
    expect(await first).toBe('ok 1')
    await expect.poll(() => releases.length).toBe(2)
    releases[1]!()
    expect(await Promise.all(later)).toEqual(['ok 2', 'ok 3', 'ok 4'])
    expect(batches).toEqual([[1], [2, 3, 4]])
  })
})
