// `apiary-relay`, the embedding API: run an Apiary node inside your own program and talk to its community
// actors. Every name here is documented in docs/embedding.md; test/api-surface.test.ts keeps the list reviewed.

export type { CommunityStats, PublishOutcome } from './actors/community/messages.js'
export { ask, KernelError, type SupervisionEvent, type TypedRef, tell } from './actors/kernel/index.js'
export type { Config, ConfigInput } from './infra/config-types.js'
export { ConfigError, loadConfig } from './infra/load-config.js'
export { BackendUnavailableError } from './infra/startup.js'
export type { Durability } from './infra/store/event-store.js'
export type { Limits } from './protocols/limits.js'
export type { NostrEvent, VerifiedEvent } from './protocols/nip01/event.js'
export type { Filter } from './protocols/nip01/filter.js'
export type { EventTemplate } from './protocols/nip01/sign.js'
export type { HostMsg } from './relay/host-messages.js'
export { createRelay, DEFAULT_COMMUNITY, type Relay, type RelayOptions, SUPPORTED_NIPS } from './relay/relay.js'
export { RelayError, type RelayErrorCode } from './relay/relay-error.js'
