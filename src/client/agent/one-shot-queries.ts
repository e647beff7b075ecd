// One-shot REQs on one connection, for discover() and the backlog pager: each gathers the verified events until
// its EOSE, then is CLOSEd. They end with their connection: a query still open then fails at once, and no
// timer of theirs is left.
import { type NostrEvent, verifyEventWasm } from '../../protocols/nip01/event.js'
import type { AgentClock } from './clock.js'
import type { RelaySocket } from './relay-socket.js'
import type { WireFilter } from './wire-filter.js'

const QUERY_TIMED_OUT = 'error: no EOSE in time'
const CONNECTION_GONE = 'error: the connection is gone'

interface OpenQuery {
  events: NostrEvent[]
  /** `closed` is why it ended without its EOSE */
  done(closed?: string): void
}

export class OneShotQueries {
  private readonly open = new Map<string, OpenQuery>()

  constructor(
    private readonly socket: RelaySocket,
    private readonly clock: AgentClock,
    private readonly timeoutMs: number,
    private readonly newQueryId: () => string,
  ) {}

  /** the events up to EOSE; rejects when the relay refuses the query, never ends it, or the connection goes */
  query(filters: WireFilter[]): Promise<NostrEvent[]> {
    const subId = this.newQueryId()
    return new Promise((resolve, reject) => {
      const events: NostrEvent[] = []
      const timer = this.clock.setTimeout(() => done(QUERY_TIMED_OUT), this.timeoutMs)
      const done = (closed?: string) => {
        this.clock.clearTimeout(timer)
        this.open.delete(subId)
        // the relay keeps a subscription it did not end itself: a timed-out one must be CLOSEd too
        if (closed === undefined || closed === QUERY_TIMED_OUT) this.socket.send(['CLOSE', subId])
        if (closed !== undefined) return reject(new Error(`the relay refused the query: ${closed}`))
        resolve(events)
      }
      this.open.set(subId, { events, done })
      if (!this.socket.send(['REQ', subId, ...filters])) done(CONNECTION_GONE)
    })
  }

  /** false when `subId` is not a query of ours (each of these three) */
  onEvent(subId: string, event: NostrEvent): boolean {
    const query = this.open.get(subId)
    if (query && verifyEventWasm(event) === 'ok') query.events.push(event)
    return query !== undefined
  }

  onEose(subId: string): boolean {
    const query = this.open.get(subId)
    query?.done()
    return query !== undefined
  }

  onClosed(subId: string, reason: string): boolean {
    const query = this.open.get(subId)
    query?.done(reason)
    return query !== undefined
  }

  /** the connection ended */
  end(): void {
    for (const query of [...this.open.values()]) query.done(CONNECTION_GONE)
  }
}
