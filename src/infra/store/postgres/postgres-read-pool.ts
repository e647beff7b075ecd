import { createConnection, type Socket } from 'node:net'
import { FairQueue } from '../fair-queue.js'
// Extension needed: plain JS shared with the SQLite read worker, which runs without a TypeScript loader.
import { ReadBudgetExceeded } from '../read-budget.mjs'
import type { PgQuery } from './postgres-query.js'
import { isRowsExceeded } from './postgres-read-budget.js'
import { connectPostgres, type Sql } from './postgres-schema.js'

/**
 * The event store's read connections (REQ, COUNT), apart from the ones that commit: a commit never queues
 * behind a read. A read's rows are bounded in its statement (postgres-read-budget.ts); its time three ways
 * (docs/architecture.md §9):
 * - on the server: `statement_timeout` is the budget, so PostgreSQL stops a statement there itself (SQLSTATE
 *   57014) rather than running on after the client gave up;
 * - for the caller: the whole read, its wait for a connection included, ends at the budget, and its
 *   statements still waiting for a connection are never sent (one already sent ends at its statement_timeout);
 * - on the wire: the server answers every statement within its budget, so a connection that sent one and heard
 *   nothing for the budget plus STALL_SLACK_MS sits on a stalled path: it is destroyed and its slot comes back.
 */

/** what the network may add to a statement's budget before its silence counts as a stalled path */
const STALL_SLACK_MS = 1_000

export interface ReadPool {
  /**
   * each statement's rows as arrays, all within one budget; rejects with ReadBudgetExceeded past it: `time`
   * past `budget.ms`, `rows` when a statement's rows budget function stopped it
   */
  values<Row>(community: string, statements: readonly PgQuery[]): Promise<Row[][]>
  end(): Promise<void>
}

/** What one read may cost: `ms` (limits.readBudgetMs), `maxRows` (limits.maxRowsExamined, counted in its statement). */
export interface PgReadBudget {
  ms: number
  maxRows: number
}

export function openReadPool(url: string, size: number, budget: PgReadBudget): ReadPool {
  const sql = connectPostgres(url, size, {
    connection: { statement_timeout: budget.ms },
    // one statement per connection: a read never waits behind another's slow statement on a connection
    max_pipeline: 0,
    // the driver's backoff grows to 20 s after a run of failed connects (each stalled one dropped here counts):
    // capped, the pool is back within a second of the path coming back
    backoff: (attempts: number) => Math.min(3 ** attempts / 100, 1),
    ...stallWatch(budget.ms + STALL_SLACK_MS),
  })
  const turns = new Turns(size)
  return {
    values: (community, statements) => valuesWithin(sql, turns, community, statements, budget),
    end: () => sql.end({ timeout: 5 }),
  }
}

/**
 * Statements handed to the driver at once: no more than it has connections, so none waits in the driver's
 * queue, where one given up on would still run later (and cancelling one that a connection being opened has
 * taken leaves that connection unusable in postgres.js 3.4). A statement whose read passed its budget while
 * it waited here is never sent. The connections are the whole node's: the statements waiting are served fairly
 * across communities (fair-queue.ts). They need no bound of their own: client reads come from the communities'
 * read places, which let a new read in only as one ends (at its budget at the latest), and the relay's own
 * reads (member lists, channel state) are a few per community, so they grow with the node's communities and
 * how long a stall lasts, never with what a client sends.
 */
class Turns {
  private free: number
  private readonly waiting = new FairQueue<{ community: string; go: () => void }>()
  private readonly held = new Map<string, number>()
  private readonly holding = (community: string) => this.held.get(community) ?? 0

  constructor(size: number) {
    this.free = size
  }

  run<T>(community: string, givenUp: () => boolean, body: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const go = () => {
        this.held.set(community, this.holding(community) + 1)
        if (givenUp()) {
          this.release(community)
          reject(new Error('read given up before its statement was sent'))
          return
        }
        body()
          .then(resolve, reject)
          .finally(() => this.release(community))
      }
      if (this.free > 0) {
        this.free--
        go()
      } else this.waiting.push({ community, go })
    })
  }

  private release(community: string): void {
    const held = this.holding(community) - 1
    if (held > 0) this.held.set(community, held)
    else this.held.delete(community)
    const next = this.waiting.shift(this.holding)
    if (next) next.go()
    else this.free++
  }
}

function valuesWithin<Row>(
  sql: Sql,
  turns: Turns,
  community: string,
  statements: readonly PgQuery[],
  budget: PgReadBudget,
): Promise<Row[][]> {
  let over = false
  const send = (q: PgQuery) => sql.unsafe(q.sql, q.params as never[], { prepare: true }).values() as unknown as Promise<Row[]>
  const all = Promise.all(
    statements.map((q) =>
      turns.run(
        community,
        () => over,
        () => send(q),
      ),
    ),
  )
  // what the statements of a read past its budget end with later is nobody's
  all.catch(() => {})
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      over = true
      reject(new ReadBudgetExceeded('time'))
    }, budget.ms)
  })
  return Promise.race([all, late])
    .catch((error: unknown) => {
      if (isCancelled(error)) throw new ReadBudgetExceeded('time')
      // the function raises on the first row past the bound
      if (isRowsExceeded(error)) throw new ReadBudgetExceeded('rows', budget.maxRows + 1)
      throw error
    })
    .finally(() => clearTimeout(timer))
}

/** SQLSTATE 57014 query_canceled: the statement_timeout */
const isCancelled = (error: unknown) => (error as { code?: unknown } | undefined)?.code === '57014'

/**
 * A socket per connection that is destroyed when it sent something and heard nothing for `silentMs`. Not
 * watched behind TLS, where the plain socket's bytes are not the protocol's: a stalled path is left to TCP
 * keepalive there.
 */
function stallWatch(silentMs: number): { socket: (o: SocketOptions) => Socket } {
  let next = 0
  return {
    socket: (o) => {
      const i = next++ % o.host.length
      const s = o.path ? createConnection(o.path) : createConnection(o.port[i] ?? 5432, o.host[i])
      if (!o.ssl) watch(s, silentMs)
      return s
    },
  }
}

/** the driver's parsed options a socket factory is called with (postgres.js 3.4 `socket`, untyped there) */
interface SocketOptions {
  host: string[]
  port: number[]
  path: string | false
  ssl: unknown
}

function watch(s: Socket, silentMs: number): void {
  const write = s.write.bind(s) as (...args: unknown[]) => boolean
  s.write = ((...args: unknown[]) => {
    s.setTimeout(silentMs)
    return write(...args)
  }) as Socket['write']
  // ReadyForQuery ('Z', length 5, status) ends every answer: the connection is idle, nothing is owed
  s.on('data', (chunk: Buffer) => {
    if (endsWithReadyForQuery(chunk)) s.setTimeout(0)
  })
  s.on('timeout', () => s.destroy(new Error(`no answer from PostgreSQL on a read connection within ${silentMs} ms`)))
}

function endsWithReadyForQuery(chunk: Buffer): boolean {
  const n = chunk.length
  return n >= 6 && chunk[n - 6] === 0x5a && chunk.readUInt32BE(n - 5) === 5
}
