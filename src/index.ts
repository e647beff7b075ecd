// The embedding API: run an Apiary node inside your own program and talk to its actors.

export type { CommunityMsg, CommunityStats, PublishOutcome } from './actors/community/messages.js'
export { ask, type SupervisionEvent, type TypedRef, tell } from './actors/kernel/index.js'
export { type Config, type ConfigInput, configSchema } from './infra/config.js'
export { loadConfig } from './infra/load-config.js'
export type { EventTemplate } from './infra/relay-key.js'
export type { NostrEvent, VerifiedEvent } from './protocols/nip01/event.js'
export { asVerified } from './protocols/nip01/event.js'
export type { Filter } from './protocols/nip01/filter.js'
export { createRelay, DEFAULT_COMMUNITY, type Relay, type RelayOptions, SUPPORTED_NIPS } from './relay/relay.js'
