// What a community actor does with a channel command (channel-commands.ts: a 9009, or a 9021 carrying an
// invite code): instead of the store, the command runs beside the actor and comes back as Commanded
// (write-commit.ts onCommanded takes it from there).
import { pipeTo } from '../kernel/index.js'
import { runChannelCommand } from './channel-commands.js'
import type { ChannelPlan } from './community-channels.js'
import type { CommunityDeps, CommunityState, CommunitySurvivors, Ctx } from './community-state.js'
import { type CommunityMsg, type PublishMsg, REDELIVER } from './messages.js'
import { NOT_PROCESSED } from './write-answers.js'
import { effectDone, lostEvents } from './write-effects.js'

export type Commanded = Extract<CommunityMsg, { type: 'Commanded' }>

/** Starts the command; the channel stays held (`ordered`) until it is answered. */
export function command(
  state: CommunityState,
  publish: PublishMsg,
  plan: ChannelPlan,
  ordered: string | undefined,
  ctx: Ctx,
  deps: CommunityDeps,
): void {
  const run = runChannelCommand(plan, publish.event, state.channels)
  // the relay's events it stores are an effect in flight until handled, as a stored change's are (write-commit.ts)
  state.inflight.effects++
  pipeTo(ctx.self, run, (outcome): CommunityMsg => ({ type: 'Commanded', publish, ordered, outcome }), {
    ...REDELIVER,
    onGiveUp: (m) => lostCommand(state, m as Commanded, deps),
  })
}

/** A command's result never reached this actor: its writer hears it, its events go to the other nodes. */
export function lostCommand(state: Pick<CommunitySurvivors, 'index' | 'inflight'>, msg: Commanded, deps: CommunityDeps): void {
  const { publish, outcome } = msg
  effectDone(state)
  if (outcome.ok && outcome.value.ok) {
    publish.reply({ accepted: true, message: '' })
    lostEvents(state, outcome.value.value, deps)
  } else publish.reply({ accepted: false, message: outcome.ok && !outcome.value.ok ? outcome.value.error : NOT_PROCESSED })
}
