// NIP-11 per community and the principal tiers of the roster: what the edge asks of a community's record.
import { createRequire } from 'node:module'
import type { PrincipalTier } from '../actors/principal/principal-actor.js'
import type { Config } from '../infra/config-types.js'
import type { CommunityRecord } from '../infra/store/community-store.js'
import { presenceLeaseSeconds } from '../protocols/agent-connection-state.js'
import { buildRelayInfo, type RelayInfo } from '../protocols/nip11.js'

export const SUPPORTED_NIPS = [1, 9, 11, 29, 40, 42, 43, 45, 70, 86, 98]

// src/relay and dist/relay are both two levels below the package root
const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version

/** `signingPubkey`: the key the relay signs the community's group state with (infra/community-key.ts). */
export function relayInfoFor(config: Config, signingPubkey: string | undefined, record: CommunityRecord | undefined): RelayInfo {
  // the community's own (changerelayname/-description/-icon), else the relay-wide values; the seeded
  // default community's name is its id, which tells a client nothing until someone renames it
  const named = record && !(record.id === 'default' && record.name === 'default')
  return buildRelayInfo({
    name: named ? record.name : config.relayName,
    description: record?.settings.description || config.relayDescription,
    icon: record?.settings.icon || undefined,
    // NIP-11: `self` is the relay's own key, the one that signs group state (NIP-29). `pubkey` is the
    // administrative contact, but nostr-tools' and relay29's group clients take the relay's key from it: unless
    // an operator names a contact, it is the same key
    pubkey: config.relayContactPubkey || signingPubkey || undefined,
    self: signingPubkey || undefined,
    contact: config.relayContact || undefined,
    supportedNips: SUPPORTED_NIPS,
    software: 'https://www.npmjs.com/package/apiary-relay',
    version: VERSION,
    limits: config.limits,
    // architecture §12: `limitation` states what this community enforces (setcommunitypolicy, allow/disallowkind)
    authRequired: config.authRequired || (record?.settings.authRequired ?? false),
    restrictedWrites: config.authRequired || (record !== undefined && hasWriteRules(record)),
    paymentRequired: false,
    // the lease is the presence TTL (community-presence.ts)
    apiary: {
      presence: {
        heartbeat_seconds: config.presenceHeartbeatSeconds,
        lease_seconds: presenceLeaseSeconds(config.presenceHeartbeatSeconds),
      },
    },
  })
}

const hasWriteRules = ({ settings, kinds }: CommunityRecord) =>
  settings.authRequired || settings.writePolicy !== 'public' || kinds.allowed.length > 0 || kinds.disallowed.length > 0

export function tierOf(record: CommunityRecord, principal: string): PrincipalTier {
  const agent = record.agents.find((a) => a.pubkey === principal)
  if (!agent) return 'human'
  return agent.tier === 'standard' ? 'agentStandard' : agent.tier === 'elevated' ? 'agentElevated' : 'agentPlatform'
}
