// The composition root (DESIGN §2): the only place that wires infra into actors.
import { mkdirSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Observable } from 'rxjs'
import { WebSocketServer } from 'ws'
import { communityPath } from './actors/community/community-actor'
import type { CommunityMsg, CommunityStats, PublishOutcome } from './actors/community/messages'
import { acceptConnections } from './actors/connection/gateway'
import { ask, createKernel, type Kernel, type SupervisionEvent, type TypedRef, tell } from './actors/kernel'
import { type AdmissionAnswer, type LimitType, type PrincipalTier, principalActor, principalPath } from './actors/principal/principal-actor'
import { type Config, type ConfigInput, configSchema } from './infra/config'
import { createMemoryRateLimiter } from './infra/gates/memory-rate-limit'
import { handleHttp } from './infra/http/http-routes'
import { createManagement } from './infra/http/management'
import { Tenants } from './infra/http/tenants'
import { createLogger, type Logger } from './infra/log'
import { createMetrics } from './infra/metrics'
import { rateLimitKey } from './infra/redis/keys'
import { type EventTemplate, loadRelayKey, type RelayKey, signAsRelay } from './infra/relay-key'
import { type CommunityRecord, seedDefaultCommunity } from './infra/store/community-store'

export { DEFAULT_COMMUNITY } from './infra/store/community-store'


import { createBanLookup } from './infra/store/ban-lookup'
import type { EventStore } from './infra/store/event-store'
import { createVerifierPool } from './infra/verify/verifier-pool'
import { asVerified } from './protocols/nip01/event'
import { buildRelayInfo } from './protocols/nip11'
import { type Backends, openBackends } from './relay-backends'
import { type Communities, createCommunities } from './relay-communities'
import { createManagementOps } from './relay-management'

export const SUPPORTED_NIPS = [1, 9, 11, 29, 40, 42, 45, 70, 86, 98]

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
  /** write the ban row, close the pubkey's sockets on this node and (in a cluster) on every other node */
  banPubkey(communityId: string, pubkey: string, reason: string, untilSeconds?: number): Promise<void>
  /** stop serving a community on every node: sockets closed, new connections 404; its data is kept */
  archiveCommunity(communityId: string): Promise<boolean>
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
  const tenants = new Tenants([])
  let shutdown: (() => Promise<void>) | undefined
  let backends: Backends | undefined
  let communities: Communities | undefined

  const communityRef = (id: string) => kernel.lookup<CommunityMsg>(communityPath(id))

  async function listen(): Promise<string> {
    mkdirSync(config.dataDir, { recursive: true })
    const relayKey = loadRelayKey(config.dataDir, config.relaySecretKey)
    key = relayKey
    const b = await openBackends(config, log, { eventStore: opts.eventStore })
    backends = b
    await seedDefaultCommunity(b.communities)
    for (const c of config.communities) {
      const r = await b.communities.put({ id: c.id, name: c.name ?? c.id, hosts: c.hosts, agents: c.agents, admins: c.admins })
      if (!r.ok) throw new Error(`config community ${c.id}: ${r.error}`)
    }
    const records = await b.communities.list()
    tenants.replace(records)
    const verifier = await createVerifierPool({ threads: config.verifyThreads })
    b.startBridges(kernel)
    const c = createCommunities({ kernel, config, backends: b, verifier, relayKey, tenants, metrics, log, nowSeconds })
    communities = c
    c.start(records)
    const revalidateTimer = setInterval(() => void c.reconcile(), config.revalidateSeconds * 1000)
    revalidateTimer.unref()
    const readFallback = createMemoryRateLimiter()
    const admit = (record: CommunityRecord, principal: string, limit: LimitType, attested: boolean): Promise<AdmissionAnswer> => {
      // the roster as of the latest reconcile, not as of the socket's upgrade (setagenttier changes it)
      const rostered = tierOf(tenants.byId(record.id) ?? record, principal)
      // an agent by owner attestation is at least agent-standard (its principal actor keeps the tier it got first)
      const tier = rostered === 'human' && attested ? 'agentStandard' : rostered
      const ref = kernel.getOrSpawn(
        principalPath(record.id, principal),
        principalActor({ community: record.id, principal, tier, rules: config.rateLimits[tier], limiter: b.limiter, readFallback }),
      )
      return ask(ref, (reply) => ({ type: 'Admit', limit, reply }), 10_000)
    }
    const banOf = createBanLookup(b.communities, nowSeconds)
    const operators = new Set([...config.operatorPubkeys, relayKey.pubkey])
    const manage = createManagement({
      tenants,
      trustForwardedProto: config.trustForwardedProto,
      verifier,
      replayGuard: b.replayGuard,
      // DESIGN §6: the caller's tier's `api` budget, in the limiter its EVENTs and REQs go through
      admitApi: (record, pubkey) => b.limiter.admit(rateLimitKey(record.id, pubkey, 'api'), config.rateLimits[tierOf(record, pubkey)].api),
      ...createManagementOps({ store: b.communities, events: b.events, communities: c, operators, banPubkey, nowSeconds }),
      nowSeconds,
      log,
    })
    const http = createServer((req, res) => {
      handleHttp(req, res, {
        metrics,
        isKnownHost: (h) => tenants.resolve(h, 'http') !== undefined,
        relayInfo: (h) => relayInfoFor(tenants.resolve(h, 'http')?.record),
        ready: () => b.ready(),
        manage,
      }).catch((error: unknown) => {
        log.error({ err: error }, 'http handler failed')
        if (!res.headersSent) res.writeHead(500).end()
      })
    })
    const wss = new WebSocketServer({ noServer: true, maxPayload: config.limits.maxMessageBytes })
    const gateway = acceptConnections({
      http,
      wss,
      kernel,
      config,
      tenants,
      limiter: b.limiter,
      readFallback,
      verifier,
      admit,
      banOf,
      isIpBlocked: (community, ip) => b.communities.isIpBlocked(community, ip),
      metrics,
      log,
      nowSeconds,
      communityRef,
    })
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject)
      http.listen(config.port, config.host, () => resolve())
    })
    const addr = http.address() as AddressInfo
    url = `ws://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`
    log.info({ url, mode: b.mode, node: b.nodeId, communities: records.map((r) => r.id) }, 'apiary listening')
    shutdown = async () => {
      clearInterval(revalidateTimer)
      await gateway.close()
      await new Promise<void>((resolve) => http.close(() => resolve()))
      await kernel.stopPrefix('community/')
      await b.close()
      await verifier.close()
      await kernel.shutdown()
    }
    return url
  }

  async function archiveCommunity(communityId: string): Promise<boolean> {
    if (!communities) throw new Error('relay not listening')
    return communities.archive(communityId)
  }

  async function banPubkey(communityId: string, pubkey: string, reason: string, untilSeconds?: number): Promise<void> {
    const ref = communityRef(communityId)
    if (!ref || !backends) throw new Error(`unknown community ${communityId} (or relay not listening)`)
    // the row first: it is the durable truth every node checks at AUTH and at every write
    await backends.communities.banPubkey(communityId, pubkey, reason, untilSeconds)
    tell(ref, { type: 'DisconnectPubkey', pubkey, reason, broadcast: true })
  }

  function relayInfoFor(record: CommunityRecord | undefined) {
    // the community's own (changerelayname/-description/-icon), else the relay-wide values; the seeded
    // default community's name is its id, which tells a client nothing until someone renames it
    const named = record && !(record.id === 'default' && record.name === 'default')
    return buildRelayInfo({
      name: named ? record.name : config.relayName,
      description: record?.settings.description || config.relayDescription,
      icon: record?.settings.icon || undefined,
      pubkey: key?.pubkey ?? '',
      contact: config.relayContact,
      supportedNips: SUPPORTED_NIPS,
      software: 'apiary',
      version: '0.1.0',
      limits: config.limits,
      // DESIGN §9: `limitation` states what this community enforces (setcommunitypolicy, allow/disallowkind)
      authRequired: config.authRequired || (record?.settings.authRequired ?? false),
      restrictedWrites: config.authRequired || (record !== undefined && hasWriteRules(record)),
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
    banPubkey,
    archiveCommunity,
  }
}

const hasWriteRules = ({ settings, kinds }: CommunityRecord) =>
  settings.authRequired || settings.writePolicy !== 'public' || kinds.allowed.length > 0 || kinds.disallowed.length > 0

function tierOf(record: CommunityRecord, principal: string): PrincipalTier {
  const agent = record.agents.find((a) => a.pubkey === principal)
  if (!agent) return 'human'
  return agent.tier === 'standard' ? 'agentStandard' : agent.tier === 'elevated' ? 'agentElevated' : 'agentPlatform'
}
