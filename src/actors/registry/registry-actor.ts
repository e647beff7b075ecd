// State: the agents this node tracks in one community (agents.ts) and whether a lease sweep is in flight.
// Messages: RegistryMsg (messages.ts): what its community saw, the results of its own reads, its sweep timer.
// Crash policy: permanent, like its community (a departure must not be lost); its tracked agents survive.
//
// The agent registry of one community (docs/agent-registry.md), at `registry/<community>` beside
// `community/<community>`: who is live here, the lease sweep every leaseSweepSeconds, and the departures.
// The community tells it what it saw (heartbeats, announcements, goodbyes) and delivers what it announces.
// Whether a 31990 is delivered live is decided in the community's live feed, not here: that check must wait
// in the feed's order with the events around it (community-survivors.ts). A directory of its own, as every
// actor kind has: the community imports its messages and lease reads; it needs nothing of the community's
// but the redelivery timing and the message it sends back (RegistryAnnounce, which the community accepts).
//
// What survives a restart or a respawn: the tracked agents, created with the def rather than in `init`. An
// agent forgotten would get no departure if its lease lapsed before its next heartbeat tracked it again.
// The sweep timer is the def's too, set once. `init` resets the rest: no sweep in flight.
import { assertNever } from '../../protocols/result.js'
import { REDELIVER } from '../community/messages.js'
import { type ActorContext, type ActorDef, type TypedRef, tell, tellUntilTaken } from '../kernel/index.js'
import {
  forgetCheck,
  onAgentAnnounced,
  onAgentSeen,
  onAnnounced,
  onGoodbye,
  onGoodbyeDone,
  onHeartbeat,
  onLeaseSweep,
  onLeasesChecked,
  onUnheld,
  type RegistryDeps,
  type RegistryState,
} from './agent-tracking.js'
import { Agents } from './agents.js'
import type { RegistryMsg } from './messages.js'

export const registryPath = (community: string) => `registry/${community}`

// docs/agent-registry.md: a departure is heard at most one sweep after the lease ends
const DEFAULT_LEASE_SWEEP_MS = 30_000
// as its community's: it hears of every heartbeat the community takes
const MAILBOX_CAPACITY = 100_000

export function registryActor(deps: RegistryDeps): ActorDef<RegistryState, RegistryMsg> {
  const agents = new Agents(deps.metrics.agentsLive)
  let self: TypedRef<RegistryMsg> | undefined
  let sweepTimer: ReturnType<typeof setInterval> | undefined
  return {
    kind: 'registry',
    init: (ctx) => {
      self = ctx.self
      // a tick the registry cannot take (full, down) is skipped: the next one sweeps
      sweepTimer ??= setInterval(() => tell(ctx.self, { type: 'LeaseSweep' }), deps.leaseSweepMs ?? DEFAULT_LEASE_SWEEP_MS)
      sweepTimer.unref?.()
      return { agents, sweeping: false }
    },
    handle: (state, msg, ctx) => handle(state, msg, ctx, deps),
    // gave up with `msg` queued: offered again for after the respawn (not a sweep's tick or its Unheld: the
    // next sweep does them again); a lost check is forgotten, so the next heartbeat asks again
    onDropped: (msg) => {
      if (self === undefined || msg.type === 'LeaseSweep' || msg.type === 'Unheld') return
      const onGiveUp = () => (msg.type === 'AgentSeen' ? forgetCheck(agents, msg.pubkey) : undefined)
      tellUntilTaken(self, msg, { ...REDELIVER, onGiveUp })
    },
    afterStop: () => {
      clearInterval(sweepTimer)
      agents.clear()
    },
    mailboxCapacity: MAILBOX_CAPACITY,
    policy: { mode: 'permanent' },
  }
}

function handle(state: RegistryState, msg: RegistryMsg, ctx: ActorContext<RegistryMsg>, deps: RegistryDeps): RegistryState {
  switch (msg.type) {
    case 'Heartbeat':
      return onHeartbeat(state, msg, ctx, deps)
    case 'AgentSeen':
      return onAgentSeen(state, msg, deps)
    case 'Announced':
      return onAnnounced(state, msg, ctx, deps)
    case 'AgentAnnounced':
      return onAgentAnnounced(state, msg)
    case 'Goodbye':
      return onGoodbye(state, msg, deps)
    case 'GoodbyeDone':
      return onGoodbyeDone(state, msg, deps)
    case 'LeaseSweep':
      return onLeaseSweep(state, ctx, deps)
    case 'LeasesChecked':
      return onLeasesChecked(state, msg, ctx, deps)
    case 'Unheld':
      return onUnheld(state, msg, deps)
    default:
      return assertNever(msg)
  }
}
