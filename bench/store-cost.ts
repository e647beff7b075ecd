// The SQLite store alone on the ingest corpus (issue 13: "the store's part ≤ 60 µs, indexes that pay for
// themselves: measure each"). One measurement = one child process (`tsx bench/store-cost.ts <variant>
// <events> <batch>`) that opens a fresh file with the shipped schema, changes one thing (the variant), works out
// the SavePlans (untimed, as the event loop does before a commit) and commits the corpus in batches of `batch`
// events with the write runner the writer thread uses (sqlite-write-core.mjs). It prints the CPU per event of
// the commits and, apart, of the WAL checkpoints (PASSIVE every CHECKPOINT_INTERVAL_MS on a second connection,
// as the checkpoint worker does), and the bytes written. Everything runs on one thread, so process.cpuUsage()
// around each call is that call's CPU.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import Database from 'better-sqlite3'
import { savePlan } from '../src/infra/store/sqlite/sqlite-save'
import { applyPragmas, migrate } from '../src/infra/store/sqlite/sqlite-schema'
import { createWriteRunner } from '../src/infra/store/sqlite/sqlite-write-core.mjs'
import { CHECKPOINT_INTERVAL_MS } from '../src/infra/store/sqlite/wal-checkpointer'
import type { VerifiedEvent } from '../src/protocols/nip01/event'
import { measureInChild } from './child'
import { corpusEvents } from './corpus'

/** What each variant changes on the shipped schema (migrate() output) before the first commit. */
export const STORE_VARIANTS = {
  'as shipped': [],
  '+ tags_by_value_kind (dropped in V2)': ['CREATE INDEX tags_by_value_kind ON tags (community, name, value, kind, created_at)'],
  // V2's index by event_seq, which its ON DELETE CASCADE used (V3 deletes tag rows by their primary key)
  '+ tags_by_event (dropped in V3)': ['CREATE INDEX tags_by_event ON tags (event_seq)'],
  '− events_by_author': ['DROP INDEX events_by_author'],
  '− events_by_author_kind': ['DROP INDEX events_by_author_kind'],
  '− events_by_kind': ['DROP INDEX events_by_kind'],
  '− events_by_time': ['DROP INDEX events_by_time'],
  '− every tag row': [],
} as const satisfies Record<string, readonly string[]>
export type StoreVariant = keyof typeof STORE_VARIANTS

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

function measure(variant: StoreVariant, count: number, batch: number): StoreCost {
  const events = corpusEvents(count)
  const dir = mkdtempSync(join(tmpdir(), 'apiary-store-cost-'))
  try {
    const db = new Database(join(dir, 'events.sqlite'))
    applyPragmas(db)
    migrate(db)
    db.pragma('wal_autocheckpoint = 0')
    for (const sql of STORE_VARIANTS[variant]) db.exec(sql)
    const checkpointer = new Database(join(dir, 'events.sqlite'))
    const runner = createWriteRunner(db)
    const p0 = process.cpuUsage()
    const plans = events.map((e) => savePlan('bench', e as VerifiedEvent, JSON.stringify(e)))
    const planMicros = micros(process.cpuUsage(p0))
    if (variant === '− every tag row') for (const p of plans) p.tags = []
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

const micros = (u: NodeJS.CpuUsage) => u.user + u.system

function writtenBytes(): number {
  const line = readFileSync('/proc/self/io', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('wchar:'))
  return Number(line?.split(/\s+/)[1] ?? Number.NaN)
}

/** One measurement in its own process (a fresh heap and page cache state per variant). */
export function storeCost(variant: StoreVariant, count: number, batch: number): Promise<StoreCost> {
  return measureInChild<StoreCost>(
    fileURLToPath(new URL('./store-cost.ts', import.meta.url)),
    [variant, String(count), String(batch)],
    variant,
  )
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [variant, count, batch] = process.argv.slice(2)
  if (!variant || !(variant in STORE_VARIANTS)) throw new Error(`variant: one of ${Object.keys(STORE_VARIANTS).join(' | ')}`)
  console.log(JSON.stringify(measure(variant as StoreVariant, Number(count ?? 30_000), Number(batch ?? 64))))
}
