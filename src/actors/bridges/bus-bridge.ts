// State: the dedicated Redis subscriber connection (a session) and the channels subscribed on it.
// Messages: Sync (connect if needed, then subscribe/unsubscribe until the session covers link.channels()),
// Down (the connection dropped). Policy: permanent + backoff 1 s → 30 s, attempts reset after 60 s of stable
// running (DESIGN §3): a crash *is* the reconnect, so supervision$ shows every outage and its recovery.
import type { BusError } from '../../infra/bus/bus.js'
import type { SubscriberLink } from '../../infra/bus/redis-bus.js'
import type { SubscriberSession } from '../../infra/bus/redis-subscriber.js'
import { type ActorContext, type ActorDef, type Kernel, type SupervisionPolicy, type TypedRef, tell } from '../kernel/index.js'

export type BusBridgeMsg =
  | { type: 'Sync' }
  | { type: 'Down'; connection: object; error: BusError }

interface BridgeState {
  session: SubscriberSession | undefined
  /** identifies the connection a Down is about: a late Down of a replaced connection is ignored */
  connection: object | undefined
  subscribed: ReadonlySet<string>
}

export const busBridgePolicy = {
  mode: 'permanent',
  backoff: { minMs: 1_000, maxMs: 30_000, jitter: 0.2 },
  resetAfterMs: 60_000,
  // Never give up: outlasting a Redis outage is the bridge's whole job, and a bridge that gave up would cut
  // this node off the cluster for good while it keeps serving local clients. Crashes are at least minMs
  // apart, and every one of them is on supervision$.
  maxRestarts: Number.MAX_SAFE_INTEGER,
  windowMs: 60_000,
} satisfies Partial<SupervisionPolicy>

export interface BusBridgeOptions {
  /** default 'bridges/bus'; one bridge per bus */
  path?: string
  /** tests shorten the backoff; fields given replace busBridgePolicy's */
  policy?: Partial<SupervisionPolicy>
}

const freshState = (): BridgeState => ({ session: undefined, connection: undefined, subscribed: new Set() })

/** Spawns the actor that owns the bus's subscriber connection; it stops by itself once the bus closes. */
export function spawnBusBridge(kernel: Kernel, link: SubscriberLink, opts: BusBridgeOptions = {}): TypedRef<BusBridgeMsg> {
  // At most one Sync waits in the mailbox: a burst of watch/unwatch calls costs one reconciliation.
  let syncQueued = false
  const requestSync = (self: TypedRef<BusBridgeMsg>) => {
    if (!syncQueued) syncQueued = tell(self, { type: 'Sync' })
  }
  let unregister = () => {}
  const def: ActorDef<BridgeState, BusBridgeMsg> = {
    kind: 'bus-bridge',
    policy: { ...busBridgePolicy, ...opts.policy },
    // runs again on every restart: that Sync reconnects and resubscribes every channel still held
    init: (ctx) => {
      requestSync(ctx.self)
      return freshState()
    },
    handle: (state, msg, ctx) => {
      switch (msg.type) {
        case 'Sync':
          syncQueued = false
          return onSync(state, link, ctx)
        case 'Down':
          return onDown(state, msg)
      }
    },
    afterStop: (state) => {
      unregister()
      state.session?.close()
    },
  }
  const ref = kernel.spawn(opts.path ?? 'bridges/bus', def)
  unregister = link.onChange(() => requestSync(ref))
  return ref
}

async function onSync(state: BridgeState, link: SubscriberLink, ctx: ActorContext<BusBridgeMsg>): Promise<BridgeState> {
  if (link.closed) {
    state.session?.close()
    void ctx.kernel.stop(ctx.path)
    return freshState()
  }
  let { session, connection } = state
  let subscribed = state.subscribed
  if (session === undefined) {
    const id = {}
    // throws (BusError) when Redis is unreachable: the crash schedules the next attempt with backoff
    session = await link.open((error) => tell(ctx.self, { type: 'Down', connection: id, error }))
    connection = id
    subscribed = new Set()
  }
  const wanted = new Set(link.channels())
  try {
    await session.subscribe([...wanted].filter((channel) => !subscribed.has(channel)))
    await session.unsubscribe([...subscribed].filter((channel) => !wanted.has(channel)))
  } catch (error) {
    // the state is discarded with the crash; the connection must not outlive it
    session.close()
    throw error
  }
  return { session, connection, subscribed: wanted }
}

function onDown(state: BridgeState, msg: Extract<BusBridgeMsg, { type: 'Down' }>): BridgeState {
  if (msg.connection !== state.connection) return state
  state.session?.close()
  throw msg.error
}
