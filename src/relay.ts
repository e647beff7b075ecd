// The composition root (DESIGN §2): the only place that wires infra into actors.
import { mkdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import type { Observable } from 'rxjs'
import { WebSocketServer } from 'ws'
import { communityActor, communityPath } from './actors/community/community-actor'
import type { CommunityMsg, CommunityStats, PublishOutcome } from './actors/community/messages'
import { acceptConnections } from './actors/connection/gateway'
import { ask, createKernel, type Kernel, type SupervisionEvent, type TypedRef } from './actors/kernel'
import { type AdmissionAnswer, type LimitType, type PrincipalTier, principalActor, principalPath } from './actors/principal/principal-actor'
import { type Config, type ConfigInput, configSchema } from './infra/config'
import { createMemoryRateLimiter } from './infra/gates/memory-rate-limit'
import { handleHttp } from './infra/http/http-routes'
import { Tenants } from './infra/http/tenants'
import { createLogger, type Logger } from './infra/log'
import { createMetrics } from './infra/metrics'
import { type EventTemplate, loadRelayKey, type RelayKey, signAsRelay } from './infra/relay-key'
import { type CommunityRecord, seedDefaultCommunity } from './infra/store/community-store'

export { DEFAULT_COMMUNITY } from './infra/store/community-store'

import type { EventStore } from './infra/store/event-store'
import { openSqliteCommunityStore } from './infra/store/sqlite-community-store'
import { openSqliteEventStore } from './infra/store/sqlite-event-store'
import { createVerifierPool } from './infra/verify/verifier-pool'
import { asVerified } from './protocols/nip01/event'
import { buildRelayInfo } from './protocols/nip11'

export const SUPPORTED_NIPS = [1, 9, 11, 40, 42, 45, 70]

export interface Relay {
  readonly config: Config
  /** ws://host:port once listening */
  readonly url: string
  readonly pubkey: string
  readonly supervision$: Observable<SupervisionEvent>
  listen(): Promise<string>
  /** graceful: stop accepting, close sockets with 1001, flush pending commits */
  close(): Promise<void>
  communityIds(): string[]
  community(id: string): TypedRef<CommunityMsg> | undefined
  /** sign `template` with the relay key and publish it in `communityId` (stored, fanned out) */
  publish(communityId: string, template: EventTemplate): Promise<PublishOutcome>
  stats(communityId: string): Promise<CommunityStats>
}

export interface RelayOptions {
  logger?: Logger
  /** bring your own EventStore (e.g. a wrapped or instrumented one); default: SQLite in dataDir */
  eventStore?: EventStore
}

export function createRelay(input: ConfigInput = {}, opts: RelayOptions = {}): Relay {
  const config = configSchema.parse(input)
  const log = opts.logger ?? createLogger(config.logLevel)
  const metrics = createMetrics()
  const kernel: Kernel = createKernel()
  kernel.supervision$.subscribe((e) => {
    metrics.supervision.inc({ type: e.type, kind: 'kind' in e ? e.kind : 'root' })
    if (e.type === 'crashed') log.error({ err: e.error, path: e.path, msgType: e.msgType }, 'actor crashed')
    if (e.type === 'gave-up' || e.type === 'degraded') log.error({ event: e }, 'supervision')
  })
  const nowSeconds = () => Math.floor(Date.now() / 1000)
  let key: RelayKey | undefined
  let url = ''
  let tenants = new Tenants([])
  let shutdown: (() => Promise<void>) | undefined

  const communityRef = (id: string) => kernel.lookup<CommunityMsg>(communityPath(id))

  async function listen(): Promise<string> {
    mkdirSync(config.dataDir, { recursive: true })
    key = loadRelayKey(config.dataDir, config.relaySecretKey)
    const dbFile = join(config.dataDir, 'apiary.sqlite')
    const communities = openSqliteCommunityStore(dbFile)
    await seedDefaultCommunity(communities)
    for (const c of config.communities) {
      const r = await communities.put({ id: c.id, name: c.name ?? c.id, hosts: c.hosts, agents: c.agents })
      if (!r.ok) throw new Error(`config community ${c.id}: ${r.error}`)
    }
    const records = await communities.list()
    tenants = new Tenants(records)
    const store =
      opts.eventStore ??
      openSqliteEventStore({
        file: dbFile,
        groupCommitMaxEvents: config.store.groupCommitMaxEvents,
        groupCommitMaxDelayMs: config.store.groupCommitMaxDelayMs,
        log,
      })
    const verifier = await createVerifierPool({ threads: config.verifyThreads })
    const limiter = createMemoryRateLimiter()
    for (const record of records) {
      kernel.spawn(communityPath(record.id), communityActor({ record, store, limits: config.limits, nowSeconds, metrics, log }))
    }
    const admit = (record: CommunityRecord, principal: string, limit: LimitType): Promise<AdmissionAnswer> => {
      const tier = tierOf(record, principal)
      const ref = kernel.getOrSpawn(
        principalPath(record.id, principal),
        principalActor({ key: `${record.id}:${principal}`, tier, rules: config.rateLimits[tier], limiter }),
      )
      return ask(ref, (reply) => ({ type: 'Admit', limit, reply }), 10_000)
    }
    const http = createServer((req, res) => {
      handleHttp(req, res, {
        metrics,
        isKnownHost: (h) => tenants.resolve(h, 'http') !== undefined,
        relayInfo: (h) => relayInfoFor(tenants.resolve(h, 'http')?.record),
        ready: () => store.ping(),
      }).catch((error: unknown) => {
        log.error({ err: error }, 'http handler failed')
        if (!res.headersSent) res.writeHead(500).end()
      })
    })
    const wss = new WebSocketServer({ noServer: true, maxPayload: config.limits.maxMessageBytes })
    const gateway = acceptConnections({ http, wss, kernel, config, tenants, limiter, verifier, admit, metrics, log, nowSeconds, communityRef })
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject)
      http.listen(config.port, config.host, () => resolve())
    })
    const addr = http.address() as AddressInfo
    url = `ws://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`
    log.info({ url, communities: records.map((r) => r.id) }, 'apiary listening')
    shutdown = async () => {
      await gateway.close()
      await new Promise<void>((resolve) => http.close(() => resolve()))
      await store.close()
      await communities.close()
      await verifier.close()
      await limiter.close()
      await kernel.shutdown()
    }
    return url
  }

  function relayInfoFor(record: CommunityRecord | undefined) {
    return buildRelayInfo({
      name: record && record.id !== 'default' ? record.name : config.relayName,
      description: config.relayDescription,
      pubkey: key?.pubkey ?? '',
      contact: config.relayContact,
      supportedNips: SUPPORTED_NIPS,
      software: 'apiary',
      version: '0.1.0',
      limits: config.limits,
      authRequired: config.authRequired,
      restrictedWrites: config.authRequired,
      paymentRequired: false,
    })
  }

  async function publish(communityId: string, template: EventTemplate): Promise<PublishOutcome> {
    const ref = communityRef(communityId)
    if (!ref || !key) throw new Error(`unknown community ${communityId} (or relay not listening)`)
    const event = asVerified(signAsRelay(key, template, nowSeconds()))
    return ask(ref, (reply) => ({ type: 'Publish', event, raw: JSON.stringify(event), reply }), 30_000)
  }

  async function stats(communityId: string): Promise<CommunityStats> {
    const ref = communityRef(communityId)
    if (!ref) throw new Error(`unknown community ${communityId}`)
    return ask(ref, (reply) => ({ type: 'Stats', reply }), 10_000)
  }

  return {
    config,
    get url() {
      return url
    },
    get pubkey() {
      return key?.pubkey ?? ''
    },
    supervision$: kernel.supervision$,
    listen,
    close: async () => {
      const s = shutdown
      shutdown = undefined
      if (s) await s()
      else await kernel.shutdown()
    },
    communityIds: () => tenants.ids(),
    community: communityRef,
    publish,
    stats,
  }
}

function tierOf(record: CommunityRecord, principal: string): PrincipalTier {
  const agent = record.agents.find((a) => a.pubkey === principal)
  if (!agent) return 'human'
  return agent.tier === 'standard' ? 'agentStandard' : agent.tier === 'elevated' ? 'agentElevated' : 'agentPlatform'
}
