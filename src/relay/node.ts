// Start-up of one node, part of the composition root: backends (retried until the start-up deadline), the
// relay key, communities, the verifier pool, the HTTP surface and the WebSocket gateway, in that order. A
// failure at any step closes what was opened before it and rejects: nothing half-started stays behind.
import { mkdirSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { WebSocketServer } from 'ws'
import { communityPath } from '../actors/community/community-actor.js'
import type { CommunityMsg } from '../actors/community/messages.js'
import { type Kernel, tell } from '../actors/kernel/index.js'
import { openSupervisedVerifier } from '../actors/node/verifier-actor.js'
import { createBusMac, deriveBusMacKey } from '../infra/bus/bus-mac.js'
import { type CommunityKeys, createCommunityKeys } from '../infra/community-key.js'
import type { Config } from '../infra/config.js'
import { ConsoleCounters } from '../infra/console/community-counters.js'
import { createMemoryRateLimiter } from '../infra/gates/memory-rate-limit.js'
import { createClientAddressing } from '../infra/http/client-ip.js'
import type { ConsoleSource } from '../infra/http/console/console-source.js'
import { handleHttp } from '../infra/http/http-routes.js'
import { createManagement } from '../infra/http/nip86/endpoint.js'
import { createOperatorAuth } from '../infra/http/operator-auth.js'
import { checkingIntervalMs, guardSlowHttp } from '../infra/http/slow-http.js'
import type { Tenants } from '../infra/http/tenants.js'
import type { Logger } from '../infra/log.js'
import type { Metrics } from '../infra/metrics.js'
import { loadRelayKey, type RelayKey } from '../infra/relay-key.js'
import { createBanLookup } from '../infra/store/ban-lookup.js'
import { createBlockedIps } from '../infra/store/blocked-ips.js'
import { type CommunityStore, seedDefaultCommunity } from '../infra/store/community-store.js'
import type { EventStore } from '../infra/store/event-store.js'
import type { PostgresEventStore } from '../infra/store/postgres/postgres-event-store.js'
import type { SqliteEventStore } from '../infra/store/sqlite/sqlite-event-store.js'
import { withControlLane } from '../infra/verify/control-lane.js'
import { createInlineVerifier } from '../infra/verify/inline-verifier.js'
import type { Verifier } from '../infra/verify/verifier.js'
import { createVerifierPool } from '../infra/verify/verifier-pool.js'
// Extension needed: verify-core is plain JS so worker threads can load it without a TypeScript loader.
import { loadSchnorr } from '../infra/verify/verify-core.mjs'
import { KIND_ANNOUNCEMENT } from '../protocols/agent-registry.js'
import type { NostrEvent } from '../protocols/nip01/event.js'
import { KIND_AUTH, KIND_PRESENCE } from '../protocols/nip01/kinds.js'
import { createAdmission, createKnownLookup } from './admission.js'
import { type Backends, openBackends } from './backends.js'
import { type Communities, createCommunities } from './communities.js'
import { openConsoleHttp } from './console-http.js'
import { acceptConnections } from './gateway.js'
import { createManagementOps } from './management.js'
import { type Mesh, openMesh } from './mesh.js'
import { startNodeConsole } from './node-console.js'
import { relayInfoFor } from './relay-info.js'

export interface NodeDeps {
  config: Config
  log: Logger
  metrics: Metrics
  kernel: Kernel
  tenants: Tenants
  eventStore?: EventStore
  wrapCommunityStore?: (store: CommunityStore) => CommunityStore
  nowSeconds: () => number
  /** the relay's ban path (relay.ts), for NIP-86 banpubkey */
  banPubkey(community: string, pubkey: string, reason: string, untilSeconds?: number): Promise<void>
}

export interface RunningNode {
  url: string
  key: RelayKey
  /** what the relay signs for each community with (NIP-11 `self` on its hosts) */
  communityKeys: CommunityKeys
  backends: Backends
  communities: Communities
  /** the relay mesh, when on (cluster mode, APIARY_MESH=on) */
  mesh?: Mesh
  /** checks the events a host publishes with a key of its own, as it checks clients' */
  verifier: Verifier
  /** what the operator console reads: the cluster's status board, the hot connections, NIP-86 on behalf of a signed-in identity */
  console: ConsoleSource
  /** graceful: stop accepting, close sockets with 1001, flush commits, release backends */
  close(): Promise<void>
}

export async function startNode(d: NodeDeps): Promise<RunningNode> {
  const { config, log, metrics, kernel, tenants, nowSeconds } = d
  // closers of what is up so far, run last-opened first on a failed start (and by close)
  const undo: (() => Promise<void> | void)[] = []
  const unwind = async () => {
    for (const step of undo.splice(0).reverse())
      await Promise.resolve(step()).catch((error: unknown) => log.warn({ err: error }, 'close step failed'))
  }
  try {
    mkdirSync(config.dataDir, { recursive: true })
    const key = loadRelayKey(config.dataDir, config.relaySecretKey)
    const communityKeys = createCommunityKeys(key, config.communities)
    const deadlineMs = Date.now() + config.startupTimeoutSeconds * 1000
    const b = await openBackends(config, log, {
      eventStore: d.eventStore,
      wrapCommunityStore: d.wrapCommunityStore,
      deadlineMs,
      busMac: createBusMac(deriveBusMacKey(key.secretKey)),
      onBusRejected: (reason) => metrics.busRejected.inc({ reason }),
    })
    undo.push(() => b.close())
    // both backends' stores count what applies to them (SQLite: read workers, writer thread; PostgreSQL: reads over budget)
    const events = b.events as Partial<Pick<SqliteEventStore | PostgresEventStore, 'stats'>>
    if (typeof events.stats === 'function') {
      const store = events as Pick<SqliteEventStore | PostgresEventStore, 'stats'>
      metrics.storeStats.stats = () => store.stats()
    }
    await seedDefaultCommunity(b.communities)
    for (const c of config.communities) {
      const r = await b.communities.put({ id: c.id, name: c.name ?? c.id, hosts: c.hosts, agents: c.agents, admins: c.admins })
      if (!r.ok) throw new Error(`config community ${c.id}: ${r.error}`)
    }
    const records = await b.communities.list()
    tenants.replace(records)
    const verifier = await openVerifier(config, log, kernel)
    undo.push(() => verifier.close())
    b.startActors(kernel)
    let clients = () => 0
    const mesh =
      config.mesh === 'on'
        ? await openMesh({
            config,
            kernel,
            backends: b,
            key,
            communityKeys,
            tenants,
            verifier,
            metrics,
            log,
            nowSeconds,
            load: () => clients(),
          })
        : undefined
    if (mesh) undo.push(() => mesh.close())
    // NIP-86 blockip entries (addresses and CIDR ranges), checked at every upgrade and NIP-86 call: kept per community
    // until a blockip or unblockip here or on another node (a control payload), at most accessCacheTtlMs
    const blockedIps = createBlockedIps(b.communities, { ttlMs: config.accessCacheTtlMs, nowMs: () => performance.now() })
    const isIpBlocked = (community: string, ip: string) => blockedIps.isBlocked(community, ip)
    // the console's per-community counts, bumped by the connections and the communities (node-console.ts reads them)
    const counters = new ConsoleCounters()
    const communities = createCommunities({
      counters,
      kernel,
      config,
      backends: b,
      verifier,
      relayKey: key,
      communityKeys,
      tenants,
      metrics,
      log,
      nowSeconds,
      mesh,
      blockListChanged: (community) => blockedIps.invalidate(community),
    })
    undo.push(() => kernel.stopPrefix('community/'))
    // each community's agent registry stops before it (undone in reverse): what it announces needs its community
    undo.push(() => kernel.stopPrefix('registry/'))
    communities.start(records)
    const revalidateTimer = setInterval(() => void communities.reconcile(), config.revalidateSeconds * 1000)
    revalidateTimer.unref()
    undo.push(() => clearInterval(revalidateTimer))
    const readFallback = createMemoryRateLimiter()
    const admission = createAdmission({ kernel, config, tenants, limiter: b.limiter, readFallback })
    const operators = new Set([...config.operatorPubkeys, key.pubkey])
    const addressing = createClientAddressing(config)
    // the sockets of a blocked range close here and, through the community's conn-control broadcast, on every node,
    // where the DisconnectIp also drops the block list (cluster-control.ts); here it is dropped at once
    const disconnectIp = (community: string, range: string, reason: string) => {
      blockedIps.invalidate(community)
      const ref = kernel.lookup<CommunityMsg>(communityPath(community))
      if (ref) tell(ref, { type: 'DisconnectIp', range, reason, broadcast: true })
    }
    const ops = createManagementOps({
      store: b.communities,
      events: b.events,
      invites: b.invites,
      communities,
      operators,
      banPubkey: d.banPubkey,
      disconnectIp,
      // here at once, on the other nodes through the community's cache-invalidation broadcast
      blockListChanged: (community) => {
        blockedIps.invalidate(community)
        const ref = kernel.lookup<CommunityMsg>(communityPath(community))
        if (ref) tell(ref, { type: 'InvalidateCache', op: { op: 'InvalidateBlockedIps' }, broadcast: true })
      },
      ipv6PrefixLength: config.ipv6PrefixLength,
      nowSeconds,
    })
    // readiness: every backend answers and no permanent actor is in backoff or down (waiting to be respawned)
    const health = async () => {
      const degraded = [...(await b.unhealthy()), ...kernel.unhealthy()]
      return { ready: degraded.length === 0, degraded }
    }
    const manage = createManagement({
      tenants,
      isIpBlocked,
      addressing,
      verifier,
      replayGuard: b.replayGuard,
      // architecture §8: the caller's tier's `api` budget and the client IP's, each through its principal actor
      admitApi: admission.admitApi,
      admitApiIp: admission.admitApiIp,
      metrics: { signatureChecks: metrics.nip86SignatureChecks, admissionRejections: metrics.admissionRejections },
      ...ops,
      nowSeconds,
      log,
    })
    const operator = createOperatorAuth({
      addressing,
      verifier,
      replayGuard: b.replayGuard,
      admitApiIp: admission.admitApiIp,
      isOperator: (pubkey) => operators.has(pubkey),
      metrics: { signatureChecks: metrics.nip86SignatureChecks, refused: metrics.operatorRequestsRefused },
      nowSeconds,
      log,
    })
    const consoleHttp = openConsoleHttp({
      config,
      redis: b.redis,
      verifier,
      replayGuard: b.replayGuard,
      admitApiIp: admission.admitApiIp,
      addressing,
      operator,
      metrics,
      log,
    })
    // set once the node's console has started (after the gateway): until then the console answers 503
    let consoleSource: ConsoleSource | undefined
    const http = createServer(
      {
        headersTimeout: config.timeouts.headersTimeoutMs,
        requestTimeout: config.timeouts.requestTimeoutMs,
        connectionsCheckingInterval: checkingIntervalMs(config.timeouts.headersTimeoutMs),
      },
      (req, res) => {
        handleHttp(req, res, {
          metrics,
          isKnownHost: (h) => tenants.resolve(h, 'http') !== undefined,
          relayInfo: (h) => {
            const record = tenants.resolve(h, 'http')?.record
            return relayInfoFor(config, record && communityKeys.of(record.id).pubkey, record)
          },
          health,
          manage,
          meshStatus: mesh ? () => mesh.status() : undefined,
          operator,
          console: consoleHttp,
          consoleSource,
        }).catch((error: unknown) => {
          log.error({ err: error }, 'http handler failed')
          if (!res.headersSent) res.writeHead(500).end()
        })
      },
    )
    guardSlowHttp(http, {
      maxPendingPerIp: config.limits.maxPendingUpgradesPerIp,
      keyOf: addressing.peerKeyOf,
      onClosed: (reason) => metrics.httpConnectionsClosed.inc({ reason }),
    })
    const wss = new WebSocketServer({ noServer: true, maxPayload: config.limits.maxMessageBytes })
    const gateway = acceptConnections({
      http,
      wss,
      kernel,
      config,
      tenants,
      verifier,
      admit: admission.admit,
      chargeRead: admission.chargeRead,
      admitConnection: admission.admitConnection,
      admitAuth: admission.admitAuth,
      banOf: createBanLookup(b.communities, nowSeconds),
      knownAmong: createKnownLookup(tenants, b.communities),
      isIpBlocked,
      addressing,
      connectionSlots: b.connectionSlots,
      metrics,
      log,
      nowSeconds,
      communityRef: (id) => kernel.lookup<CommunityMsg>(communityPath(id)),
      counters,
    })
    clients = () => gateway.connections
    undo.push(() => closeHttp(http))
    // before the server's close, which waits for every response: a console stream never ends by itself
    if (consoleHttp) undo.push(() => consoleHttp.close())
    undo.push(() => gateway.close())
    const nodeConsole = startNodeConsole({
      config,
      cluster: key.pubkey,
      kernel,
      backends: b,
      connections: gateway.metered,
      counters,
      tenants,
      operators,
      health,
      mesh,
      agentConnectionsOf: (id) => communities.agentConnectionsOf(id),
      ops,
      metrics,
      log,
    })
    undo.push(() => nodeConsole.stop())
    consoleSource = nodeConsole.source
    // the first step of a close: the mesh hands its sessions over while this node still serves its clients
    if (mesh) undo.push(() => mesh.drain())
    const url = await listenOn(http, config)
    log.info({ url, mode: b.mode, node: b.nodeId, communities: records.map((r) => r.id) }, 'apiary listening')
    return { url, key, communityKeys, backends: b, communities, mesh, verifier, console: nodeConsole.source, close: unwind }
  } catch (error) {
    await unwind()
    throw error
  }
}

/**
 * Connections the kernel holds for accept: a reconnect storm brings thousands at once, and past node's default
 * (511) their SYNs are dropped and retried after 1, 3 and 7 s. Linux caps it at net.core.somaxconn.
 */
const LISTEN_BACKLOG = 4_096

async function listenOn(http: Server, config: Config): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject)
    http.listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG }, () => {
      http.off('error', reject)
      resolve()
    })
  })
  const addr = http.address() as AddressInfo
  return `ws://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`
}

function closeHttp(http: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    if (!http.listening) return resolve()
    http.close(() => resolve())
  })
}

/** What a client's handshake and lease wait on: verified ahead of bulk ingest (control-lane.ts). */
const isControlFrame = (e: NostrEvent) => e.kind === KIND_AUTH || e.kind === KIND_PRESENCE || e.kind === KIND_ANNOUNCEMENT

// The event loop's share the control lane may take: 60 ms a second. VERIFY_COST_US is one verification's cost
// per backend (bench `ceiling`, per pool thread), so 1,000 or 250 control frames a second; 3,000 agents
// heartbeat 200 times a second. The rest of a busier second is verified by the pool.
const CONTROL_LANE_LOOP_MS_PER_SECOND = 60
const VERIFY_COST_US = { native: 60, wasm: 240 } as const

/**
 * The verifier pool (its threads reniced by threads.writePathNice) for bulk ingest, under the node's verifier
 * actor, which replaces a pool that gave up; control frames are verified on the event loop itself, within a
 * budget, so a handshake never waits for a worker thread to be scheduled.
 */
async function openVerifier(config: Config, log: Logger, kernel: Kernel): Promise<Verifier> {
  const schnorr = loadSchnorr(config.verifyBackend)
  if (schnorr.fallback)
    log.warn({ reason: schnorr.fallback }, 'native Schnorr verifier unavailable: verifying in WASM, ~5x the CPU per event')
  const backend = schnorr.name
  log.info({ backend, threads: config.verifyThreads }, 'signature verifier')
  const control = createInlineVerifier(backend)
  const bulk = await openSupervisedVerifier(kernel, (onUnavailable) =>
    createVerifierPool({ threads: config.verifyThreads, nice: config.threads.writePathNice, backend, log, onUnavailable }),
  )
  const maxPerSecond = Math.floor((CONTROL_LANE_LOOP_MS_PER_SECOND * 1000) / VERIFY_COST_US[backend])
  return withControlLane(bulk, control, isControlFrame, { maxPerSecond })
}
