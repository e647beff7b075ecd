// Child process of the `store-pg` scenario (`tsx bench/processes/measure-postgres-store.ts <events> <batch>`):
// the PostgreSQL store alone on the ingest corpus, no relay and no Redis. It makes a fresh database, opens the
// shipped PostgresEventStore on it (its migrations, its group commit with at most `batch` events per
// transaction) and saves the corpus with 2 × `batch` saves in flight. It prints one JSON line: the node's CPU
// per event (the driver and the batch plans: this process has nothing else to do) and the server's (every
// local `postgres` process: a shared server, so other clients would count too).
import type { VerifiedEvent } from '../built-package'
import { openPostgresEventStore } from '../internal'
import { createBenchDatabase } from '../lib/cluster-backends'
import { corpusEvents } from '../lib/corpus'
import { postgresCpuSeconds, postgresCpuSince } from '../lib/proc-readings'

export interface PgStoreCost {
  events: number
  /** this process's CPU per event (driver, batch plans, group commit), µs */
  nodeUs: number
  /** the PostgreSQL server processes' CPU per event, µs */
  serverUs: number
  /** events per committed transaction, on average */
  perTransaction: number
}

async function measure(count: number, batch: number): Promise<PgStoreCost> {
  const events = corpusEvents(count)
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

const [count, batch] = process.argv.slice(2).map(Number)
console.log(JSON.stringify(await measure(count || 30_000, batch || 400)))
// the bench database's admin connection pool may hold the process open for its idle timeout
process.exit(0)
