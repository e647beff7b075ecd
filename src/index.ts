// The embedding API: run an Apiary node inside your own program and talk to its actors.

export type { CommunityMsg, CommunityStats, PublishOutcome } from './actors/community/messages'
export { ask, type SupervisionEvent, type TypedRef, tell } from './actors/kernel'
export { type Config, type ConfigInput, configSchema, loadConfig } from './infra/config'
export type { EventTemplate } from './infra/relay-key'
export type { NostrEvent, VerifiedEvent } from './protocols/nip01/event'
export type { Filter } from './protocols/nip01/filter'
export { createRelay, DEFAULT_COMMUNITY, type Relay, type RelayOptions, SUPPORTED_NIPS } from './relay'
