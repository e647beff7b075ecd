// The embedding API: run an Apiary node inside your own program and talk to its actors.

export type { CommunityMsg, CommunityStats, PublishOutcome } from './actors/community/messages.js'
export { ask, type SupervisionEvent, type TypedRef, tell } from './actors/kernel/index.js'
export { type Config, type ConfigInput, configSchema, loadConfig } from './infra/config.js'
export type { NostrEvent, VerifiedEvent } from './protocols/nip01/event.js'
export { asVerified } from './protocols/nip01/event.js'
export type { Filter } from './protocols/nip01/filter.js'
export type { EventTemplate } from './protocols/nip01/sign.js'
export { createRelay, DEFAULT_COMMUNITY, type Relay, type RelayOptions, SUPPORTED_NIPS } from './relay/relay.js'
