// State: the dedicated Redis subscriber connection (a session), the channels subscribed on it, and the sync in
// flight. Messages: Sync (connect if needed, then subscribe/unsubscribe until the session covers
// link.channels()), Synced (that I/O's outcome, piped back: the handler never waits on Redis), Down (the
// connection dropped). Policy: permanent + backoff 1 s → 30 s, attempts reset after 60 s of stable running
// (docs/architecture.md §4.4): a crash *is* the reconnect, so supervision$ shows every outage and its recovery.
import { BusError } from '../../infra/bus/bus.js'
import type { SubscriberLink } from '../../infra/bus/redis-bus.js'
import type { SubscriberSession } from '../../infra/bus/redis-subscriber.js'
import {
  type ActorContext,
  type ActorDef,
  type Kernel,
  pipeTo,
  type Settled,
  type SupervisionPolicy,
  type TypedRef,
  tell,
} from '../kernel/index.js'

type Covered = { session: SubscriberSession; subscribed: ReadonlySet<string> }

export type BusBridgeMsg =
  | { type: 'Sync' }
  | { type: 'Synced'; attempt: object; outcome: Settled<Covered> }
  | { type: 'Down'; connection: object; error: BusError }

interface BridgeState {
  session: SubscriberSession | undefined
  /** identifies the connection a Down is about: a late Down of a replaced connection is ignored */
  connection: object | undefined
  subscribed: ReadonlySet<string>
  /** the sync in flight: its identity, the connection it works on (a new one when it opens one), and a Down of that connection meanwhile */
  syncing: { attempt: object; connection: object; down?: BusError } | undefined
  /** a Sync arrived while one was in flight: run another once it is done */
  again: boolean
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
  /** default SYNC_DEADLINE_MS; tests shorten it */
  syncDeadlineMs?: number
}

const freshState = (): BridgeState => ({
  session: undefined,
  connection: undefined,
  subscribed: new Set(),
  syncing: undefined,
  again: false,
})

/** A Synced the bridge cannot take (mailbox full, or stopped) is offered again; one it never takes closes the session it carries. */
const PIPE = { everyMs: 500, forMs: 60_000 } as const

/**
 * Longest a sync may take. The subscriber connection has no command timeout (a subscription has no reply
 * deadline of its own), so a Redis that keeps the socket open but stops answering would otherwise hold the
 * sync, and with it the bridge, forever: past this it fails, the bridge crashes and backs off.
 */
export const SYNC_DEADLINE_MS = 10_000

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
    supervisor: 'node',
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
          return onSync(state, link, ctx, opts.syncDeadlineMs ?? SYNC_DEADLINE_MS)
        case 'Synced':
          return onSynced(state, msg, () => requestSync(ctx.self))
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

function onSync(state: BridgeState, link: SubscriberLink, ctx: ActorContext<BusBridgeMsg>, deadlineMs: number): BridgeState {
  if (link.closed) {
    state.session?.close()
    void ctx.kernel.stop(ctx.path)
    return freshState()
  }
  if (state.syncing) return { ...state, again: true }
  const attempt = {}
  // a new connection gets a new identity now, so that its Down is recognised while the sync is in flight
  const connection = state.session && state.connection ? state.connection : {}
  const onDown = (error: BusError) => tell(ctx.self, { type: 'Down', connection, error })
  pipeTo(
    ctx.self,
    withDeadline(cover(link, state.session, state.subscribed, onDown), deadlineMs),
    (outcome): BusBridgeMsg => ({ type: 'Synced', attempt, outcome }),
    {
      ...PIPE,
      onGiveUp: (msg) => {
        if (msg.type === 'Synced' && msg.outcome.ok) msg.outcome.value.session.close()
      },
    },
  )
  return { ...state, syncing: { attempt, connection }, again: false }
}

/** Beside the actor: opens a session if there is none, then (un)subscribes until it covers link.channels(). */
async function cover(
  link: SubscriberLink,
  current: SubscriberSession | undefined,
  subscribed: ReadonlySet<string>,
  onDown: (error: BusError) => void,
): Promise<Covered> {
  const wanted = new Set(link.channels())
  // throws (BusError) when Redis is unreachable: the crash schedules the next attempt with backoff
  const session = current ?? (await link.open(onDown))
  const have = current ? subscribed : new Set<string>()
  try {
    await session.subscribe([...wanted].filter((channel) => !have.has(channel)))
    await session.unsubscribe([...have].filter((channel) => !wanted.has(channel)))
  } catch (error) {
    // the state is discarded with the crash; the connection must not outlive it
    session.close()
    throw error
  }
  return { session, subscribed: wanted }
}

/** `work`, or a BusError once `deadlineMs` passed; a session it brings after that is closed. */
function withDeadline(work: Promise<Covered>, deadlineMs: number): Promise<Covered> {
  return new Promise<Covered>((resolve, reject) => {
    let late = false
    const timer = setTimeout(() => {
      late = true
      reject(new BusError('APIARY_BUS_UNAVAILABLE', `redis subscriber did not answer within ${deadlineMs} ms`))
    }, deadlineMs)
    work.then(
      (covered) => {
        clearTimeout(timer)
        if (late) covered.session.close()
        else resolve(covered)
      },
      (error: unknown) => {
        clearTimeout(timer)
        if (!late) reject(error)
      },
    )
  })
}

function onSynced(state: BridgeState, msg: Extract<BusBridgeMsg, { type: 'Synced' }>, syncAgain: () => void): BridgeState {
  const { syncing } = state
  if (syncing?.attempt !== msg.attempt) {
    // from before a restart: its session is nobody's
    if (msg.outcome.ok && msg.outcome.value.session !== state.session) msg.outcome.value.session.close()
    return state
  }
  if (!msg.outcome.ok) {
    // the crash discards the state: the session must not outlive it (closing is idempotent)
    state.session?.close()
    throw msg.outcome.error
  }
  const { session, subscribed } = msg.outcome.value
  if (syncing.down) {
    session.close()
    throw syncing.down
  }
  if (state.again) syncAgain()
  return { session, connection: syncing.connection, subscribed, syncing: undefined, again: false }
}

function onDown(state: BridgeState, msg: Extract<BusBridgeMsg, { type: 'Down' }>): BridgeState {
  if (state.syncing && msg.connection === state.syncing.connection && msg.connection !== state.connection) {
    // the connection the sync in flight opened: it fails when its outcome arrives
    return { ...state, syncing: { ...state.syncing, down: msg.error } }
  }
  if (msg.connection !== state.connection) return state
  state.session?.close()
  throw msg.error
}
