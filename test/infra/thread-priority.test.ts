// Worker threads yield to the event loop (config threads.*, src/infra/thread-priority.mjs): every thread this
// process runs is read from /proc, so the test sees what the kernel schedules, not what we asked for.
import { readdirSync, readFileSync } from 'node:fs'
import { getPriority } from 'node:os'
import { afterEach, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/infra/load-config'
import { createVerifierPool, type VerifierPool } from '../../src/infra/verify/verifier-pool'
import { eventually } from '../support/eventually'
import { sqliteFiles } from './store/sqlite-files'

/** How many of this process's threads run at each nice value. */
function threadsByNice(): Map<number, number> {
  const counts = new Map<number, number>()
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    } catch {
      continue // the thread ended meanwhile
    }
    // after the command name in parentheses: field 3 (state) onwards; nice is field 19
    const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])
    counts.set(nice, (counts.get(nice) ?? 0) + 1)
  }
  return counts
}

const base = getPriority(0)
const at = (nice: number) => threadsByNice().get(Math.min(19, base + nice)) ?? 0

describe.runIf(process.platform === 'linux')('worker thread priority', () => {
  let pool: VerifierPool | undefined
  afterEach(async () => {
    await pool?.close()
    pool = undefined
  })
  const files = sqliteFiles('thread-priority')

  it('runs each verifier thread at the event loop’s nice value plus threads.writePathNice', async () => {
    const before = at(7)
    pool = await createVerifierPool({ threads: 2, nice: 7 })
    expect(at(7) - before).toBe(2)
    expect(getPriority(0)).toBe(base)
  })

  it('leaves the verifier threads at the event loop’s priority when the nice value is 0', async () => {
    const before = threadsByNice().get(base) ?? 0
    pool = await createVerifierPool({ threads: 2, nice: 0 })
    expect((threadsByNice().get(base) ?? 0) - before).toBeGreaterThanOrEqual(2)
  })

  it('runs the SQLite writer at writerNice and the read workers and checkpointer at readerNice', async () => {
    const [writers, readers] = [at(4), at(9)]
    const store = files.open(files.freshFile(), { readWorkers: 2, writerThread: true, writerNice: 4, readerNice: 9 })
    await eventually(
      () => store.stats().readWorkersReady === 2 && at(4) - writers === 1 && at(9) - readers === 3,
      'the writer at writerNice, two read workers and the checkpointer at readerNice',
    )
    expect(at(4) - writers).toBe(1)
    expect(at(9) - readers).toBe(3)
    expect(getPriority(0)).toBe(base)
  })

  it('names each worker thread by its role, so top -H and the bench can tell them apart', async () => {
    pool = await createVerifierPool({ threads: 2, nice: 0 })
    const store = files.open(files.freshFile(), { readWorkers: 2, writerThread: true })
    await eventually(() => store.stats().readWorkersReady === 2 && named('apiary-reader') === 2, 'two named read workers')
    expect(named('apiary-verify')).toBe(2)
    expect(named('apiary-writer')).toBe(1)
    expect(named('apiary-ckpt')).toBe(1)
  })
})

/** How many of this process's threads carry `name`. */
function named(name: string): number {
  let n = 0
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      if (readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === name) n++
    } catch {} // the thread ended meanwhile
  }
  return n
}

describe('worker thread priority settings', () => {
  it('default to +5 for the write path and +10 for reads, and take APIARY_THREADS_* from the environment', () => {
    expect(loadConfig({ env: {} }).threads).toEqual({ writePathNice: 5, readNice: 10 })
    const env = { APIARY_THREADS_WRITE_PATH_NICE: '0', APIARY_THREADS_READ_NICE: '19' }
    expect(loadConfig({ env }).threads).toEqual({ writePathNice: 0, readNice: 19 })
  })

  it('refuses a nice value past 19', () => {
    expect(() => loadConfig({ env: { APIARY_THREADS_READ_NICE: '20' } })).toThrow(/readNice/)
  })
})
