// `apiary-relay/client`: what runs in other programs, talking to a relay over the wire. It imports only
// src/protocols (docs/architecture.md §2), so it carries none of the relay's backends. The CLI's argument
// helpers stay out: it imports them from their modules. Every name here is documented in docs/embedding.md.

export type { JobErrorCode } from '../protocols/jobs.js'
export type { NostrEvent } from '../protocols/nip01/event.js'
export { type EventTemplate, type SigningKey, toSigningKey } from '../protocols/nip01/sign.js'
export { callManagement, type ManagementAnswer, type ManagementCall } from './admin-client.js'
export {
  AgentClient,
  type AgentClientOptions,
  type AgentClock,
  AgentError,
  type AgentErrorCode,
  type AgentMetrics,
  type AgentState,
  type AgentStateChange,
  type Capability,
  type DiscoveredAgent,
  type JobCall,
  type JobChunk,
  type JobContext,
  JobError,
  type JobHandler,
  type JobResult,
  type PublishResult,
  type RandomSource,
  type RequestOptions,
  RetryableJobError,
  type ServedJob,
  type ServeOptions,
} from './agent/agent-client.js'
export type { SubscribeOptions } from './agent/subscriptions.js'
export {
  openRelaySession,
  type RelayAnswer,
  RelayClientError,
  type RelayClientErrorCode,
  type RelaySession,
  type SessionOptions,
  type WireFilter,
} from './channel-client.js'
