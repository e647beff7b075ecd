// The configuration's shape as the package publishes it: written out rather than inferred from the zod schema
// (config.ts), so the declarations a host compiles against never import zod and a zod upgrade can't change
// them. config.ts fails to compile when these and the schema part ways. Units, defaults and the reasons for
// them live in the schema.

import type { Limits } from '../protocols/limits.js'
import type { Durability } from './store/event-store.js'

interface RateRule {
  ratePerSecond: number
  burst: number
}

interface RateTier {
  events: RateRule
  reqs: RateRule
  api: RateRule
}

type AgentTier = 'standard' | 'elevated' | 'platform'

/** The effective configuration: every setting present, defaults filled in (`relay.config`, `loadConfig`). */
export interface Config {
  port: number
  host: string
  dataDir: string
  redisUrl: string
  databaseUrl: string
  mesh: 'off' | 'on'
  meshPort: number
  meshHost: string
  meshHellosPerIpPerSecond: number
  meshAdvertisedAddress: string
  meshTlsCertFile: string
  meshTlsKeyFile: string
  meshTlsCaFile: string
  meshLeaseTtlMs: number
  meshLeaseRenewMs: number
  revalidateSeconds: number
  accessCacheTtlMs: number
  startupTimeoutSeconds: number
  logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent'
  relayName: string
  relayDescription: string
  relayContact: string
  relayContactPubkey: string
  relaySecretKey: string
  presenceHeartbeatSeconds: number
  leaseSweepSeconds: number
  agentOrphanScanSeconds: number
  agentSessionTimeoutSeconds: number
  authRequired: boolean
  trustForwardedProto: boolean
  trustedProxies: string[]
  ipv6PrefixLength: number
  operatorPubkeys: string[]
  verifyThreads: number
  verifyBackend: 'auto' | 'native' | 'wasm'
  threads: { writePathNice: number; readNice: number }
  /** the protocol's limits (advertised in NIP-11) and the edge's own */
  limits: Limits & {
    maxPendingOutboundBytes: number
    maxInboundBytesInFlight: number
    slowConsumerGraceMs: number
    maxConnectionsPerIp: number
    maxPendingUpgradesPerIp: number
    maxConcurrentAuth: number
    maxPubkeysPerConnection: number
    /** rows the store may examine for one REQ/COUNT */
    maxRowsExamined: number
    /** longest one REQ/COUNT may run in the store, ms */
    readBudgetMs: number
  }
  rateLimits: {
    human: RateTier
    agentStandard: RateTier
    agentElevated: RateTier
    agentPlatform: RateTier
    connectionsPerIp: RateRule
    apiPerIp: RateRule
    authPerIp: RateRule
    freshKeySeconds: number
  }
  timeouts: {
    pingIntervalMs: number
    idleUnauthenticatedMs: number
    authWindowSeconds: number
    headersTimeoutMs: number
    requestTimeoutMs: number
  }
  store: {
    groupCommitMaxEvents: number
    groupCommitMaxDelayMs: number
    readWorkers: number
    inlineReadMaxRows: number
    writerThread: boolean
    /** what an acknowledged commit survives (SQLite; PostgreSQL follows its server's synchronous_commit) */
    durability: Durability
    queryTimeoutMs: number
    postgresReadPoolSize: number
  }
  /** NIP-29 timeline references and late publication */
  channels: {
    timelineWindowEvents: number
    maxModerationAgeSeconds: number
    maxPostAgeSeconds: number
  }
  /** dispatched jobs (docs/jobs.md): the queue's bound, the accept deadline, reassignments, sizes */
  jobs: {
    maxQueuedPerCapability: number
    maxCapabilitiesPerCommunity: number
    maxOpenPerRequester: number
    acceptTimeoutMs: number
    maxAttempts: number
    maxRequestBytes: number
    maxDeadlineMs: number
  }
  /** the operator console: its HTTP side and the status board every node publishes to */
  console: {
    enabled: boolean
    sessionTtlSeconds: number
    statusIntervalMs: number
  }
  communities: {
    id: string
    name?: string
    hosts: string[]
    agents: { pubkey: string; tier: AgentTier }[]
    admins: string[]
    /** the key that signs for this community, hex; empty = derived from the relay key (community-key.ts) */
    secretKey: string
  }[]
}

type RateTierInput = { [K in keyof RateTier]?: Partial<RateRule> }

/**
 * What `createRelay` and `loadConfig`'s overrides take: any setting may be left out (its default applies), and
 * the booleans also take 'true' / 'false', as they come from the environment.
 */
export interface ConfigInput
  extends Partial<
    Omit<
      Config,
      | 'authRequired'
      | 'trustForwardedProto'
      | 'threads'
      | 'limits'
      | 'rateLimits'
      | 'timeouts'
      | 'store'
      | 'channels'
      | 'jobs'
      | 'console'
      | 'communities'
    >
  > {
  authRequired?: boolean | string
  trustForwardedProto?: boolean | string
  threads?: Partial<Config['threads']>
  limits?: Partial<Config['limits']>
  rateLimits?: {
    human?: RateTierInput
    agentStandard?: RateTierInput
    agentElevated?: RateTierInput
    agentPlatform?: RateTierInput
    connectionsPerIp?: Partial<RateRule>
    apiPerIp?: Partial<RateRule>
    authPerIp?: Partial<RateRule>
    freshKeySeconds?: number
  }
  timeouts?: Partial<Config['timeouts']>
  store?: Partial<Omit<Config['store'], 'writerThread'>> & { writerThread?: boolean | string }
  channels?: Partial<Config['channels']>
  jobs?: Partial<Config['jobs']>
  console?: { enabled?: boolean | string; sessionTtlSeconds?: number; statusIntervalMs?: number }
  communities?: {
    id: string
    name?: string
    hosts: string[]
    agents?: { pubkey: string; tier: AgentTier }[]
    admins?: string[]
    secretKey?: string
  }[]
}
