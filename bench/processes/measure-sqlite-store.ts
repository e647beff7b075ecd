// Child process of the `store` scenario (`tsx bench/processes/measure-sqlite-store.ts <events> <batch>`): the
// SQLite store alone on the ingest corpus, no relay. It opens a fresh file with the shipped schema, works out
// the SavePlans (as the event loop does before a commit) and commits the corpus in batches of `batch` events
// with the write runner the writer thread uses, checkpointing PASSIVE every CHECKPOINT_INTERVAL_MS from a
// second connection as the checkpoint worker does. Everything runs on this one thread, so process.cpuUsage()
// around each call is that call's CPU. It prints one JSON line: StoreCost.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { VerifiedEvent } from '../built-package'
import { applyPragmas, CHECKPOINT_INTERVAL_MS, createWriteRunner, migrate, savePlan } from '../internal'
import { corpusEvents } from '../lib/corpus'

export interface StoreCost {
  /** CPU of the commits per event, µs */
  commitUs: number
  /** CPU of the checkpoints per event, µs */
  checkpointUs: number
  /** bytes this process wrote per event (WAL frames and checkpoint copies) */
  writtenBytes: number
  /** the SavePlans, per event (event loop, not the writer), µs */
  planUs: number
}

const micros = (u: NodeJS.CpuUsage) => u.user + u.system

function writtenBytes(): number {
  const line = readFileSync('/proc/self/io', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('wchar:'))
  return Number(line?.split(/\s+/)[1] ?? Number.NaN)
}

function measure(count: number, batch: number): StoreCost {
  const events = corpusEvents(count)
  const dir = mkdtempSync(join(tmpdir(), 'apiary-store-cost-'))
  try {
    const db = new Database(join(dir, 'events.sqlite'))
    applyPragmas(db)
    migrate(db)
    db.pragma('wal_autocheckpoint = 0')
    const checkpointer = new Database(join(dir, 'events.sqlite'))
    const runner = createWriteRunner(db)
    const p0 = process.cpuUsage()
    const plans = events.map((e) => savePlan('bench', e as VerifiedEvent, JSON.stringify(e)))
    const planMicros = micros(process.cpuUsage(p0))
    const written0 = writtenBytes()
    let commit = 0
    let checkpoint = 0
    let lastCheckpoint = performance.now()
    for (let i = 0; i < plans.length; i += batch) {
      const c0 = process.cpuUsage()
      runner.commit(plans.slice(i, i + batch))
      commit += micros(process.cpuUsage(c0))
      if (performance.now() - lastCheckpoint >= CHECKPOINT_INTERVAL_MS) {
        const k0 = process.cpuUsage()
        checkpointer.pragma('wal_checkpoint(PASSIVE)')
        checkpoint += micros(process.cpuUsage(k0))
        lastCheckpoint = performance.now()
      }
    }
    const written = writtenBytes() - written0
    checkpointer.close()
    db.close()
    const per = (x: number) => Math.round((x / plans.length) * 10) / 10
    return {
      commitUs: per(commit),
      checkpointUs: per(checkpoint),
      writtenBytes: Math.round(written / plans.length),
      planUs: per(planMicros),
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const [count, batch] = process.argv.slice(2).map(Number)
console.log(JSON.stringify(measure(count || 30_000, batch || 64)))
