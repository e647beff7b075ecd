// Ephemeral writes: delivered live and published to the other nodes, never stored. A presence heartbeat
// (kind 20001) takes its hold in the handler and is recorded in the presence store beside the actor first; a
// goodbye clears the presence there first (community-presence.ts). Either comes back as PresenceWritten; the
// agent registry hears of it, and the connection's agent state follows it (agent-connections.ts).
import { BYE_STATUS } from '../../protocols/agent-registry.js'
import { KIND_JOB_CHUNK } from '../../protocols/jobs.js'
import { KIND_PRESENCE } from '../../protocols/nip01/kinds.js'
import { pipeTo } from '../kernel/index.js'
import { clearPresence, holdPresence, recordPresence, unholdForBye, unholdPresence } from './community-presence.js'
import type { CommunityDeps, CommunityState, Ctx } from './community-state.js'
import { type CommunityMsg, type PublishMsg, REDELIVER } from './messages.js'
import { tellRegistry } from './registry-tells.js'
import { NOT_PROCESSED, PRESENCE_NOT_RECORDED, refuse } from './write-answers.js'

/** An ephemeral event that passed its checks: delivered now, or once the presence store has it. */
export function writeEphemeral(state: CommunityState, publish: PublishMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, raw, reply } = publish
  if (event.kind !== KIND_PRESENCE) {
    // a job chunk is fenced here, as it is relayed: it is never stored (docs/jobs.md#chunks)
    const fenced = deps.jobs?.refuseChunk(event)
    if (fenced) {
      deps.metrics.jobReportsFenced.inc()
      return refuse(state, reply, fenced)
    }
    return deliverEphemeral(state, publish, deps)
  }
  if (event.content === BYE_STATUS) return writeGoodbye(state, publish, ctx, deps)
  const hold = holdPresence(state.presenceHolds, state.conns, event, publish.conn)
  if (typeof hold === 'string') return refuse(state, reply, hold)
  const recorded = recordPresence(hold, event, raw, deps.presence)
  pipeTo(ctx.self, recorded, (o): CommunityMsg => ({ type: 'PresenceWritten', publish, hold, outcome: o }), {
    ...REDELIVER,
    onGiveUp: () => {
      unholdPresence(state.presenceHolds, hold)
      reply({ accepted: false, message: NOT_PROCESSED })
    },
  })
  return state
}

/** The agent client's goodbye: its presence is cleared beside the actor, then it is answered. */
function writeGoodbye(state: CommunityState, publish: PublishMsg, ctx: Ctx, deps: CommunityDeps): CommunityState {
  const { event, reply } = publish
  const held = unholdForBye(state.presenceHolds, state.conns, event, publish.conn)
  if (typeof held === 'string') return refuse(state, reply, held)
  tellRegistry(deps, { type: 'Goodbye', pubkey: event.pubkey })
  pipeTo(
    ctx.self,
    clearPresence(held, event.pubkey, deps.presence),
    (o): CommunityMsg => ({ type: 'PresenceWritten', publish, outcome: o }),
    {
      ...REDELIVER,
      onGiveUp: () => {
        reply({ accepted: false, message: NOT_PROCESSED })
        tellRegistry(deps, { type: 'GoodbyeDone', pubkey: event.pubkey, cleared: false })
      },
    },
  )
  return state
}

export function onPresenceWritten(
  state: CommunityState,
  msg: Extract<CommunityMsg, { type: 'PresenceWritten' }>,
  deps: CommunityDeps,
): CommunityState {
  const { publish, outcome, hold } = msg
  const { pubkey } = publish.event
  // a goodbye: the registry sends the agent's departure once its presence is gone
  if (hold === undefined) tellRegistry(deps, { type: 'GoodbyeDone', pubkey, cleared: outcome.ok })
  if (!outcome.ok) {
    deps.log.error({ err: outcome.error, community: deps.record.id }, 'presence store failed')
    if (hold !== undefined) {
      unholdPresence(state.presenceHolds, hold)
      // the heartbeat came on time on this connection: the relay's view of it stays live (an outage of the
      // presence store must not lapse every agent here, and hand away their jobs), though it is not recorded
      const connId = publish.conn?.id
      if (connId !== undefined && state.conns.has(connId)) state.agents.keepAlive(connId)
    }
    return refuse(state, publish.reply, PRESENCE_NOT_RECORDED)
  }
  const connId = publish.conn?.id
  if (hold !== undefined) {
    tellRegistry(deps, { type: 'Heartbeat', pubkey })
    // a heartbeat whose connection left meanwhile must not bring it back as an agent nobody will close
    if (connId !== undefined && state.conns.has(connId)) state.agents.heartbeat(connId, pubkey)
  } else {
    deps.metrics.agentByes.inc()
    if (connId !== undefined) state.agents.goodbye(connId)
  }
  return deliverEphemeral(state, publish, deps)
}

function deliverEphemeral(state: CommunityState, publish: PublishMsg, deps: CommunityDeps): CommunityState {
  state.feed.offer(publish.event, publish.raw)
  // with the mesh a job chunk goes to the other nodes in order over the tunnel, else on the bus like the rest
  const meshed = publish.event.kind === KIND_JOB_CHUNK && deps.jobs?.relayChunk(publish.raw) === true
  if (!meshed) deps.cluster.link.publishEvent(publish.raw)
  publish.reply({ accepted: true, message: '' })
  return state
}
