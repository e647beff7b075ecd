import type { Limits } from './limits.js'

export interface RelayInfoParams {
  name: string
  description: string
  /** NIP-11 `icon`, a URL; omitted from the document when undefined */
  icon?: string
  /** the administrative contact's pubkey; omitted when undefined */
  pubkey?: string
  /** the relay's own pubkey (NIP-11 `self`); omitted when undefined */
  self?: string
  /** an administrative alternate contact (a URI); omitted when undefined */
  contact?: string
  supportedNips: number[]
  software: string
  version: string
  limits: Limits
  authRequired: boolean
  restrictedWrites: boolean
  paymentRequired: boolean
  /** Apiary's own section: what the agent client sizes its heartbeats and lease by; omitted when undefined */
  apiary?: ApiaryInfo
}

/** docs/agent-registry.md: the presence gradient an agent must keep to stay in the registry. */
export interface ApiaryInfo {
  presence: { heartbeat_seconds: number; lease_seconds: number }
}

export interface RelayLimitation {
  max_message_length: number
  max_subscriptions: number
  max_filters: number
  /** Apiary's own field: values in the lists of all the filters of one REQ/COUNT together */
  max_req_values: number
  max_limit: number
  default_limit: number
  max_subid_length: number
  max_event_tags: number
  max_content_length: number
  created_at_lower_limit: number
  created_at_upper_limit: number
  auth_required: boolean
  restricted_writes: boolean
  payment_required: boolean
}

export interface RelayInfo {
  name: string
  description: string
  icon?: string
  pubkey?: string
  self?: string
  contact?: string
  supported_nips: number[]
  software: string
  version: string
  limitation: RelayLimitation
  apiary?: ApiaryInfo
}

/**
 * The NIP-11 document. `limitation` states exactly what parseClientMessage/parseEvent/parseFilter enforce
 * (docs/architecture.md §12); created_at limits are seconds relative to now, as our window is.
 */
export function buildRelayInfo(p: RelayInfoParams): RelayInfo {
  const l = p.limits
  return {
    name: p.name,
    description: p.description,
    ...(p.icon !== undefined && { icon: p.icon }),
    ...(p.pubkey !== undefined && { pubkey: p.pubkey }),
    ...(p.self !== undefined && { self: p.self }),
    ...(p.contact !== undefined && { contact: p.contact }),
    supported_nips: [...new Set(p.supportedNips)].sort((a, b) => a - b),
    software: p.software,
    version: p.version,
    limitation: {
      max_message_length: l.maxMessageBytes,
      max_subscriptions: l.maxSubscriptions,
      max_filters: l.maxFilters,
      max_req_values: l.maxReqValues,
      max_limit: l.maxLimit,
      default_limit: l.defaultLimit,
      max_subid_length: l.maxSubidLength,
      max_event_tags: l.maxEventTags,
      max_content_length: l.maxContentBytes,
      created_at_lower_limit: l.createdAtPastSeconds,
      created_at_upper_limit: l.createdAtFutureSeconds,
      auth_required: p.authRequired,
      restricted_writes: p.restrictedWrites,
      payment_required: p.paymentRequired,
    },
    ...(p.apiary !== undefined && { apiary: p.apiary }),
  }
}
