// The PostgreSQL store alone on the ingest corpus, beside bench/store-cost.ts for SQLite (issue 13: cluster
// mode ≥ 0.9× the SQLite figure). One measurement = one child process (`tsx bench/store-cost-pg.ts <variant>
// <events> <batch>`) that makes a fresh database, opens the shipped PostgresEventStore on it (its migrations,
// its group commit with `batch` events per transaction at most, two in flight) and saves the variant's events
// with 2 × `batch` saves in flight. It prints the node's CPU per event (the driver and the batch plans: this
// process has nothing else to do) and the PostgreSQL server's (every `postgres` process on this machine, as the
// ingest-pg scenario counts it: a shared server, so other clients would count too; the store's connections live
// through the whole window, so their backends are counted). The variants leave events
// out rather than change the schema: what an event class costs the database, not a schema to ship.
import { fileURLToPath, pathToFileURL } from 'node:url'
import { openPostgresEventStore } from '../src/infra/store/postgres/postgres-event-store'
import type { VerifiedEvent } from '../src/protocols/nip01/event'
import { kindClass } from '../src/protocols/nip01/kinds'
import { measureInChild } from './child'
import { createBenchDatabase, postgresCpuSeconds, postgresCpuSince } from './cluster'
import { corpusEvents } from './corpus'
import type { BenchEvent } from './fixtures'

/** Which of the corpus' events a variant saves. */
export const PG_STORE_VARIANTS = {
  'as shipped': (events) => events,
  // kind 3 contact lists (~2 % of the corpus, 5–200 `p` tags each): every version replaces the one before,
  // its tag rows deleted and the new ones inserted
  '− kind 3 events': (events) => events.filter((e) => e.kind !== 3),
  // only what SAVE_REGULAR's multi-row statement decides: no replaceable or addressable event
  'regular events only': (events) => events.filter((e) => kindClass(e.kind) === 'regular'),
  '− every tag row': (events) => events.map((e) => ({ ...e, tags: [] })),
} as const satisfies Record<string, (events: BenchEvent[]) => BenchEvent[]>
export type PgStoreVariant = keyof typeof PG_STORE_VARIANTS

export interface PgStoreCost {
  /** events the variant saved */
  events: number
  /** this process's CPU per event (driver, batch plans, group commit), µs */
  nodeUs: number
  /** the PostgreSQL server processes' CPU per event, µs */
  serverUs: number
  /** events per committed transaction, on average */
  perTransaction: number
}

async function measure(variant: PgStoreVariant, count: number, batch: number): Promise<PgStoreCost> {
  const events = PG_STORE_VARIANTS[variant](corpusEvents(count))
  const raws = events.map((e) => JSON.stringify(e))
  const db = await createBenchDatabase()
  try {
    const store = await openPostgresEventStore({ url: db.url, groupCommitMaxEvents: batch, groupCommitMaxDelayMs: 10 })
    try {
      const node0 = process.cpuUsage()
      const server0 = postgresCpuSeconds()
      let next = 0
      await Promise.all(
        Array.from({ length: 2 * batch }, async () => {
          while (next < events.length) {
            const i = next++
            await store.save('bench', events[i] as VerifiedEvent, raws[i]!)
          }
        }),
      )
      const node = process.cpuUsage(node0)
      const server = postgresCpuSince(server0)
      const { transactions, events: committed } = store.stats()
      const per = (micros: number) => Math.round((micros / events.length) * 10) / 10
      return {
        events: events.length,
        nodeUs: per(node.user + node.system),
        serverUs: per(server * 1e6),
        perTransaction: Math.round(committed / Math.max(1, transactions)),
      }
    } finally {
      await store.close()
    }
  } finally {
    await db.drop()
  }
}

/** One measurement in its own process (a fresh heap and a fresh database per variant). */
export function pgStoreCost(variant: PgStoreVariant, count: number, batch: number): Promise<PgStoreCost> {
  return measureInChild<PgStoreCost>(
    fileURLToPath(new URL('./store-cost-pg.ts', import.meta.url)),
    [variant, String(count), String(batch)],
    variant,
  )
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [variant, count, batch] = process.argv.slice(2)
  if (!variant || !(variant in PG_STORE_VARIANTS)) throw new Error(`variant: one of ${Object.keys(PG_STORE_VARIANTS).join(' | ')}`)
  console.log(JSON.stringify(await measure(variant as PgStoreVariant, Number(count ?? 30_000), Number(batch ?? 400))))
  // the bench database's admin connection pool may hold the process open for its idle timeout
  process.exit(0)
}
