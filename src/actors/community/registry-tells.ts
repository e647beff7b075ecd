// What a community tells its agent registry (src/actors/registry/): the heartbeats, announcements and goodbyes
// it saw. Each is offered again while the registry cannot take it (down until its respawn, or full); one it
// never takes (stopped) is logged: a lost heartbeat is covered by the next one, a lost goodbye by the sweep.
import { tellUntilTaken } from '../kernel/index.js'
import type { RegistryMsg } from '../registry/messages.js'
import type { CommunityDeps } from './community-state.js'
import { REDELIVER } from './messages.js'

export function tellRegistry(deps: Pick<CommunityDeps, 'registry' | 'log' | 'record'>, msg: RegistryMsg): void {
  const lost = () => deps.log.warn({ community: deps.record.id, type: msg.type }, 'the agent registry did not take a message')
  const ref = deps.registry()
  if (ref === undefined) lost()
  else tellUntilTaken(ref, msg, { ...REDELIVER, onGiveUp: lost })
}
