// State: one capability's queue and assignments in one community (dispatcher-state.ts), rebuilt from the store.
// Messages: DispatcherMsg (messages.ts): from its community, from the agent connections, its own I/O, its timer.
// Crash policy: permanent; a restart reads the open jobs back from the store, which holds every decision.
//
// The job dispatcher (docs/jobs.md) at `dispatcher/<community>/<capability>`: it hands each job to exactly
// one live agent, under a generation the store writes first, and hands it on when that agent leaves, lapses,
// refuses or does not accept in time. Whatever a superseded agent still sends is refused by the store
// (a result, feedback) or by the community from the board (a chunk).
import { assertNever } from '../../protocols/result.js'
import { type ActorDef, tell } from '../kernel/index.js'
import { onAssigned, pump } from './assignment.js'
import type { Ctx, DispatcherDeps, DispatcherState } from './dispatcher-state.js'
import { onAgentGone, onCancelled, onClosed, onEnqueued, onReported, onTick, onUndelivered } from './job-end.js'
import type { DispatcherMsg } from './messages.js'
import { onRebuilt, startRebuild } from './rebuild.js'
import { onResynced, RESYNC_MS, startResync } from './resync.js'

export const dispatcherPath = (community: string, capability: string) => `dispatcher/${community}/${capability}`

const DEFAULT_TICK_MS = 250
const IDLE_STOP_MS = 60_000
// every stored request of its capability is told to it, at the community's ingest rate
const MAILBOX_CAPACITY = 100_000

export function dispatcherActor(deps: DispatcherDeps): ActorDef<DispatcherState, DispatcherMsg> {
  let timer: ReturnType<typeof setInterval> | undefined
  let resyncTimer: ReturnType<typeof setInterval> | undefined
  return {
    kind: 'dispatcher',
    init: (ctx) => {
      // a tick the dispatcher cannot take is skipped: the next one looks again
      // and only while it has open jobs, so that one without any stops as idle
      timer ??= setInterval(() => {
        if (deps.board.openCount(deps.capability) > 0) tell(ctx.self, { type: 'Tick' })
      }, deps.tickMs ?? DEFAULT_TICK_MS)
      timer.unref?.()
      if (deps.fence !== undefined) {
        // only while it has open jobs, as the tick; a node that lost what it had to tell asks for one (Resync)
        resyncTimer ??= setInterval(() => {
          if (deps.board.openCount(deps.capability) > 0) tell(ctx.self, { type: 'Resync' })
        }, RESYNC_MS)
        resyncTimer.unref?.()
      }
      startRebuild(ctx, deps)
      return {
        ready: false,
        jobs: new Map(),
        queue: [],
        held: new Map(),
        lastAssignedMs: new Map(),
        resting: new Map(),
        early: [],
        earlyReports: [],
      }
    },
    handle: (state, msg, ctx) => handle(state, msg, ctx, deps),
    afterStop: () => {
      clearInterval(timer)
      clearInterval(resyncTimer)
      if (deps.stopped) deps.stopped()
      else deps.board.forget(deps.capability)
    },
    mailboxCapacity: MAILBOX_CAPACITY,
    // one without open jobs holds nothing the store does not: the next request or agent starts it again
    idleStopMs: IDLE_STOP_MS,
    policy: { mode: 'permanent' },
  }
}

function handle(state: DispatcherState, msg: DispatcherMsg, ctx: Ctx, deps: DispatcherDeps): DispatcherState {
  switch (msg.type) {
    case 'Enqueued':
      return onEnqueued(state, msg, ctx, deps)
    case 'Reported':
      return onReported(state, msg, ctx, deps)
    case 'Cancelled':
      return onCancelled(state, msg, ctx, deps)
    case 'AgentReady':
      pump(state, ctx, deps)
      return state
    case 'AgentGone':
      return onAgentGone(state, msg, ctx, deps)
    case 'Undelivered':
      return onUndelivered(state, msg, ctx, deps)
    case 'Rebuilt':
      return onRebuilt(state, msg, ctx, deps)
    case 'Assigned':
      return onAssigned(state, msg, ctx, deps)
    case 'Closed':
      return onClosed(state, msg, ctx, deps)
    case 'Tick':
      return onTick(state, ctx, deps)
    case 'Resync':
      return startResync(state, ctx, deps)
    case 'Resynced':
      return onResynced(state, msg, ctx, deps)
    default:
      return assertNever(msg)
  }
}
