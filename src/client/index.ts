// `apiary-relay/client`: what runs in other programs, talking to a relay over the wire. It imports only
// src/protocols (DESIGN §2), so it carries none of the relay's backends. The agent client comes here next.

export type { NostrEvent } from '../protocols/nip01/event.js'
export type { EventTemplate, SigningKey } from '../protocols/nip01/sign.js'
export {
  callManagement,
  isPubkeyHex,
  isSecretKeyHex,
  type ManagementAnswer,
  type ManagementCall,
  signManagementAuth,
  toAdminKey,
  toManagementUrl,
} from './admin-client.js'
export {
  openRelaySession,
  type RelayAnswer,
  RelayClientError,
  type RelayClientErrorCode,
  type RelaySession,
  type SessionOptions,
  type WireFilter,
} from './channel-client.js'
