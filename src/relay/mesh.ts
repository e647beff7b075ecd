// The relay mesh (docs/mesh.md), part of the composition root: wires this node's runtime identity, the readiness
// registry, the session directory, the tunnel server and the mesh actors (membership, peer links, sessions).
// Only in cluster mode with APIARY_MESH=on; otherwise the community actor stays every channel's owner.
import { readFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { schnorr } from '@noble/curves/secp256k1.js'
import { AccessGate } from '../actors/community/access-gate.js'
import { communityPath } from '../actors/community/community-actor.js'
import type { RelayEvent } from '../actors/community/community-channels.js'
import { type CommunityMsg, type PublishOutcome, REDELIVER } from '../actors/community/messages.js'
import { ask, type Kernel, tell, tellUntilTaken } from '../actors/kernel/index.js'
import type { OwnerSinks } from '../actors/mesh/channel-owner.js'
import { type ForwardedWriteDeps, judgeForwardedWrite } from '../actors/mesh/forwarded-write.js'
import {
  type Membership,
  type MembershipDeps,
  type MembershipMsg,
  type PeerView,
  spawnMembership,
} from '../actors/mesh/membership-actor.js'
import { type SessionAnswer, type SessionDeps, type SessionMsg, type SessionView, spawnSession } from '../actors/mesh/session-actor.js'
import type { CommunityKeys } from '../infra/community-key.js'
import type { Config } from '../infra/config.js'
import type { Tenants } from '../infra/http/tenants.js'
import { ConfigError } from '../infra/load-config.js'
import type { Logger } from '../infra/log.js'
import { createHelloBudget } from '../infra/mesh/hello-budget.js'
import { createReadinessRegistry } from '../infra/mesh/readiness-registry.js'
import { createSessionDirectory } from '../infra/mesh/session-directory.js'
import type { Tunnel, TunnelEnd, TunnelHandlers } from '../infra/mesh/tunnel.js'
import { dialTunnel, startTunnelServer, type TunnelSetup, type TunnelTls } from '../infra/mesh/tunnel-handshake.js'
import type { Metrics } from '../infra/metrics.js'
import type { RedisClient } from '../infra/redis/connect.js'
import { type RelayKey, signAsRelay } from '../infra/relay-key.js'
import { createBanLookup } from '../infra/store/ban-lookup.js'
import type { CommunityRecord } from '../infra/store/community-store.js'
import type { Verifier } from '../infra/verify/verifier.js'
import { toIpPrincipal } from '../protocols/ip-address.js'
import { attestRuntime } from '../protocols/mesh/attestation.js'
import { encodeJsonPayload, FrameType, MESH_PROTOCOL_VERSION, parseJsonPayload } from '../protocols/mesh/frames.js'
import type { MeshIdentity } from '../protocols/mesh/hello.js'
import {
  JOB_MESH_OPS,
  type JobMeshReply,
  type JobMeshRequest,
  parseJobMeshReply,
  parseJobMeshRequest,
} from '../protocols/mesh/job-frames.js'
import { buildReadinessRecord, READINESS_REFRESH_MS } from '../protocols/mesh/readiness.js'
import {
  type ForwardedAuth,
  type ModerateReply,
  type ModerateRequest,
  NO_AUTH,
  parseModerateReply,
  parseModerateRequest,
} from '../protocols/mesh/session-frames.js'
import { channelOfSession, channelSessionId, SESSION_KINDS } from '../protocols/mesh/session-id.js'
import type { MeshStatus } from '../protocols/mesh/status.js'
import { asVerified, parseEventShape, type VerifiedEvent } from '../protocols/nip01/event.js'
import { toSigningKey } from '../protocols/nip01/sign.js'
import { reason } from '../protocols/reasons.js'
import type { Backends } from './backends.js'
import { createMeshJobs, type MeshJobs } from './mesh-jobs.js'

export interface Mesh {
  readonly runtime: string
  readonly endpoint: string
  /** job dispatch across the nodes: each capability's session, the other nodes' requests about jobs */
  readonly jobs: MeshJobs
  status(): MeshStatus
  /** decide a channel's moderation event on its owner node (here or over the tunnel) */
  moderate(community: string, channel: string, event: VerifiedEvent, raw: string, auth: ForwardedAuth): Promise<PublishOutcome>
  /** SIGTERM: gossip draining, hand every owned session over (RELEASE), say goodbye to the peers */
  drain(): Promise<void>
  close(): Promise<void>
}

export interface MeshDeps {
  config: Config
  kernel: Kernel
  redis: RedisClient
  relayKey: RelayKey
  sinks: OwnerSinks
  storedGeneration(community: string, session: string): Promise<number>
  /** what an owner stored, for this node's community actor (fan-out here, publish to the others) */
  deliver(community: string, events: RelayEvent[]): void
  verifier: Verifier
  /** open client connections: the load a readiness record advertises */
  load(): number
  /** the node's backends answer: a record is published only then */
  ready(): boolean
  metrics: Metrics
  log: Logger
}

const GOSSIP_INTERVAL_MS = 2_000
// Heartbeats twice as often as gossip: with the detector's 1.5 s acceptable pause and its 200 ms floor a dead
// peer is suspected ~3.5 s after its last beat once its rhythm is learnt, still under 6 s while the window
// holds only the seed, and a peer that stalls 2 s (3 s of silence) stays at phi ~2.
const HEARTBEAT_INTERVAL_MS = 1_000
const RECONCILE_INTERVAL_MS = 5_000
/** IPs the Hello budget tracks at once: mesh peers are a handful of addresses */
const HELLO_BUDGET_MAX_IPS = 4_096
/** At most one registry listing a second for Hellos that name a runtime not yet listed (a peer just started). */
const KNOWN_REFRESH_MS = 1_000
/** Refused Hellos are counted each; logged at most once per this interval, with how many were not logged. */
const REFUSAL_LOG_MS = 10_000
/** How long a moderation event waits for its owner (here or elsewhere) before `error:`; under the client's 30 s. */
const WORK_DEADLINE_MS = 15_000
const ASK_MS = WORK_DEADLINE_MS + 5_000

export async function startMesh(d: MeshDeps): Promise<Mesh> {
  const { config, kernel, redis, log } = d
  const runtimeKey = toSigningKey(schnorr.utils.randomSecretKey())
  const runtime = runtimeKey.pubkey
  const identity: MeshIdentity = { runtimeKey, relayPubkey: d.relayKey.pubkey, attestation: attestRuntime(d.relayKey, runtime) }
  const registry = createReadinessRegistry({
    redis,
    anchorRelayPubkey: d.relayKey.pubkey,
    onSkipped: (key, why) => {
      d.metrics.meshRegistrySkipped.inc()
      log.warn({ key, why }, 'mesh readiness record skipped')
    },
  })
  const directory = createSessionDirectory({ redis, runtime, leaseTtlMs: config.meshLeaseTtlMs })
  const links = new Map<string, Tunnel>()
  const peers = new Map<string, PeerView>()
  const sessions = new Map<string, SessionView>()
  let draining = false
  let membership: Membership | undefined

  const sessionDeps: SessionDeps = {
    runtime,
    directory,
    storedGeneration: d.storedGeneration,
    sinks: d.sinks,
    forward,
    deliver: d.deliver,
    fenceRejected: (why) => d.metrics.meshFenceRejections.inc({ reason: why }),
    leaseLost: (why) => d.metrics.meshLeasesLost.inc({ reason: why }),
    sessions,
    renewMs: config.meshLeaseRenewMs,
    workDeadlineMs: WORK_DEADLINE_MS,
    now: () => performance.now(),
    log,
  }
  const sessionRef = (community: string, channel: string) =>
    spawnSession(kernel, community, channelSessionId(channel), channel, sessionDeps)
  const jobs = createMeshJobs({
    kernel,
    runtime,
    directory,
    storedGeneration: d.storedGeneration,
    peers: () => [...links.keys()],
    send: sendJobs,
    sessions,
    renewMs: config.meshLeaseRenewMs,
    maxSessionsPerCommunity: config.jobs.maxCapabilitiesPerCommunity,
    metrics: d.metrics,
    log,
  })

  async function sendJobs(peer: string, request: JobMeshRequest, timeoutMs: number): Promise<JobMeshReply> {
    const tunnel = links.get(peer)
    if (!tunnel) throw new Error(`no mesh link to ${peer.slice(0, 12)}`)
    const json = parseJsonPayload(await tunnel.request(encodeJsonPayload(request), timeoutMs))
    const reply = json.ok ? parseJobMeshReply(json.value) : json
    if (!reply.ok) throw new Error(reply.error)
    return reply.value
  }

  async function forward(owner: string, request: ModerateRequest, timeoutMs: number): Promise<ModerateReply> {
    const tunnel = links.get(owner)
    if (!tunnel) throw new Error(`no mesh link to ${owner.slice(0, 12)}`)
    const body = await tunnel.request(encodeJsonPayload(request), timeoutMs)
    const json = parseJsonPayload(body)
    const reply = json.ok ? parseModerateReply(json.value) : json
    if (!reply.ok) throw new Error(reply.error)
    return reply.value
  }

  async function answerRequest(peer: string, body: Uint8Array): Promise<Uint8Array> {
    const json = parseJsonPayload(body)
    if (json.ok && JOB_MESH_OPS.includes((json.value as { op?: unknown } | null)?.op as string)) {
      const request = parseJobMeshRequest(json.value)
      if (!request.ok) throw new Error(request.error)
      return encodeJsonPayload(await jobs.answer(peer, request.value))
    }
    const request = json.ok ? parseModerateRequest(json.value) : json
    if (!request.ok) throw new Error(request.error)
    const { fence, event: raw, auth = NO_AUTH } = request.value
    const shape = parseEventShape(raw)
    if (!shape || (await d.verifier.verify(shape)) !== 'ok') throw new Error(reason('invalid', 'forwarded event does not verify'))
    const channel = channelOfSession(fence.session)
    if (channel === undefined) throw new Error(reason('invalid', 'not a channel session'))
    const answer = await ask<SessionMsg, SessionAnswer>(
      sessionRef(fence.community, channel),
      (reply) => ({
        type: 'Moderate',
        event: asVerified(shape),
        raw,
        auth,
        reply,
        remote: { generation: fence.generation, owner: fence.owner },
      }),
      ASK_MS,
    )
    const reply: ModerateReply =
      'refused' in answer
        ? {
            ok: false,
            refused: answer.refused,
            ...(answer.holder ? { holder: { owner: answer.holder.owner, generation: answer.holder.generation } } : {}),
          }
        : {
            ok: true,
            accepted: answer.outcome.accepted,
            message: answer.outcome.message,
            generation: Math.max(1, answer.generation),
            owner: answer.owner || runtime,
          }
    return encodeJsonPayload(reply)
  }

  // The runtimes the readiness registry lists: a Hello naming another is refused before any signature check.
  // Refreshed by every listing; a miss asks for one more (at most one a second), for a peer that just started.
  let known = new Set<string>()
  let lastRefreshMs = Number.NEGATIVE_INFINITY
  const listReady = async () => {
    const records = await registry.list(Date.now())
    known = new Set(records.map((r) => r.runtime))
    return records
  }
  const isKnownRuntime = (runtime: string) => {
    if (known.has(runtime)) return true
    const now = performance.now()
    if (now - lastRefreshMs >= KNOWN_REFRESH_MS) {
      lastRefreshMs = now
      listReady().catch((error: unknown) => log.warn({ err: error }, 'mesh readiness registry not listed'))
    }
    return false
  }
  const helloBudget = createHelloBudget({
    perSecond: config.meshHellosPerIpPerSecond,
    burst: Math.max(1, Math.ceil(config.meshHellosPerIpPerSecond * 4)),
    maxIps: HELLO_BUDGET_MAX_IPS,
    keyOf: (ip) => {
      const principal = toIpPrincipal(ip, config.ipv6PrefixLength)
      return principal.ok ? principal.value : ip
    },
  })
  let refusalsUnlogged = 0
  let refusalLoggedAtMs = Number.NEGATIVE_INFINITY
  const refused = (why: string, refusal: string) => {
    d.metrics.meshHellosRefused.inc({ reason: refusal })
    const now = performance.now()
    if (now - refusalLoggedAtMs < REFUSAL_LOG_MS) {
      refusalsUnlogged++
      return
    }
    log.warn({ why, notLogged: refusalsUnlogged }, 'mesh tunnel refused')
    refusalLoggedAtMs = now
    refusalsUnlogged = 0
  }
  // every tunnel's end is counted; one that ended on a frame that did not open is logged too
  const watch = (t: Tunnel) => {
    void t.closed.then((end: TunnelEnd) => {
      d.metrics.meshTunnelsClosed.inc({ reason: end.reason })
      if (end.reason === 'forged' || end.reason === 'replayed' || end.reason === 'reordered')
        log.warn({ peer: t.peer, reason: end.reason }, 'mesh tunnel closed: a frame did not open')
    })
    return t
  }

  // a Ping is the peer's heartbeat (it needs no answer); gossip goes to membership
  const handlersFor = (peer: string): TunnelHandlers => ({
    onRequest: (body) => answerRequest(peer, body),
    onControl: (type, payload) => {
      if (membership && type !== FrameType.Pong) tell(membership.ref, { type: 'Control', peer, ping: type === FrameType.Ping, payload })
    },
  })
  const setup: TunnelSetup = {
    identity,
    anchorRelayPubkey: d.relayKey.pubkey,
    handlersFor,
    helloBudget,
    isKnownRuntime,
    ...(config.meshTlsCaFile ? { tlsCa: readPem(config, 'meshTlsCaFile') } : {}),
  }
  const tls: TunnelTls | undefined = config.meshTlsCertFile
    ? { cert: readPem(config, 'meshTlsCertFile'), key: readPem(config, 'meshTlsKeyFile') }
    : undefined
  // this node's own stalls (GC, a blocked loop, SIGSTOP): suspicion of peers is suppressed after one
  const loopDelay = monitorEventLoopDelay({ resolution: 20 })
  loopDelay.enable()
  const bindHost = config.meshHost || config.host
  const server = await startTunnelServer(
    bindHost,
    config.meshPort,
    setup,
    (t) => {
      watch(t)
      if (membership) membership.accept(t)
      else t.goodbye('ended')
    },
    refused,
    tls,
  )
  // the scheme says how peers dial this node; the record carrying it is signed by this runtime, so no one
  // between (nor with write access to Redis) can turn a wss:// endpoint back into ws://
  const endpoint = `${tls ? 'wss' : 'ws'}://${advertised(config.meshAdvertisedAddress, bindHost, server.port)}`
  const membershipDeps: MembershipDeps = {
    self: runtime,
    endpoint,
    gossipIntervalMs: GOSSIP_INTERVAL_MS,
    heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
    reconcileIntervalMs: RECONCILE_INTERVAL_MS,
    readinessRefreshMs: READINESS_REFRESH_MS,
    links,
    peers,
    listReady,
    publishReady: ({ load, draining: drainingNow }) => {
      if (!d.ready() && !drainingNow) return undefined
      const record = buildReadinessRecord(
        runtimeKey,
        d.relayKey.pubkey,
        identity.attestation,
        { endpoint, protocol: MESH_PROTOCOL_VERSION, capabilities: [...SESSION_KINDS], load, draining: drainingNow },
        Date.now(),
      )
      return registry.publish(record)
    },
    load: d.load,
    loopDelayMaxMs: () => {
      const maxMs = loopDelay.max / 1e6
      loopDelay.reset()
      return Number.isFinite(maxMs) ? maxMs : 0
    },
    peerDeps: {
      self: runtime,
      dial: (ep, peer) => dialTunnel(ep, peer, setup).then(watch),
      links,
      log,
    },
    // a suspect owner's sessions are taken over as soon as their leases lapse, without waiting for a request
    suspicionChanged: (peer, suspect) => {
      if (!suspect) return
      jobs.peerSuspect(peer)
      for (const s of sessions.values()) {
        if (s.local || s.owner !== peer) continue
        const ref = kernel.lookup<SessionMsg>(`mesh-session/${s.community}/${s.session}`)
        if (ref) tell(ref, { type: 'OwnerSuspect', owner: peer })
      }
    },
    now: () => performance.now(),
    log,
  }
  membership = spawnMembership(kernel, membershipDeps)
  log.info({ runtime, endpoint }, 'mesh started')

  async function drain(): Promise<void> {
    if (draining) return
    draining = true
    if (membership) await ask<MembershipMsg, void>(membership.ref, (done) => ({ type: 'Drain', done }), 5_000).catch(() => {})
    const owned = [...sessions.values()].filter((s) => s.local)
    await Promise.all(
      owned.map((s) => {
        const ref = kernel.lookup<SessionMsg>(`mesh-session/${s.community}/${s.session}`)
        return ref ? ask<SessionMsg, void>(ref, (done) => ({ type: 'Release', done: () => done() }), 5_000).catch(() => {}) : undefined
      }),
    )
    for (const tunnel of links.values()) tunnel.goodbye('draining')
    await registry.remove(runtime).catch((error: unknown) => log.warn({ err: error }, 'mesh readiness record not deleted'))
    log.info({ released: owned.length }, 'mesh drained')
  }

  return {
    runtime,
    endpoint,
    jobs,
    status: () => ({ runtime, draining, peers: [...peers.values()], sessions: [...sessions.values()] }),
    async moderate(community, channel, event, raw, auth) {
      if (draining) return { accepted: false, message: reason('error', 'this node is shutting down, retry') }
      const answer = await ask<SessionMsg, SessionAnswer>(
        sessionRef(community, channel),
        (reply) => ({ type: 'Moderate', event, raw, auth, reply }),
        ASK_MS,
      )
      return 'refused' in answer ? { accepted: false, message: reason('error', 'the channel owner is moving, retry') } : answer.outcome
    },
    drain,
    async close() {
      await drain()
      await kernel.stopPrefix('mesh-session/')
      await kernel.stopPrefix('mesh/')
      await server.close()
      loopDelay.disable()
    },
  }
}

export interface OpenMeshDeps {
  config: Config
  kernel: Kernel
  backends: Backends
  key: RelayKey
  /** what the owner of a channel signs its state with */
  communityKeys: CommunityKeys
  tenants: Tenants
  verifier: Verifier
  metrics: Metrics
  log: Logger
  nowSeconds: () => number
  load: () => number
}

/** The mesh on this node's backends: the owner's writes go to PostgreSQL fenced, its effects to the community actors. */
export function openMesh(o: OpenMeshDeps): Promise<Mesh> {
  const { backends: b, kernel, key, communityKeys, tenants } = o
  if (b.mode !== 'cluster' || !b.redis || !b.postgresEvents)
    throw new Error('the relay mesh needs cluster mode with the PostgreSQL event store')
  // offered again while the community is full or respawning, as its own I/O results are (REDELIVER)
  const tellCommunity = (community: string, msg: CommunityMsg, lost: string) => {
    const ref = kernel.lookup<CommunityMsg>(communityPath(community))
    if (!ref) return o.log.warn({ community }, lost)
    tellUntilTaken(ref, msg, { ...REDELIVER, onGiveUp: () => o.log.warn({ community }, lost) })
  }
  const forwardedDeps: ForwardedWriteDeps = {
    record: (community) => tenants.byId(community),
    gate: (record) => gateOf(record),
    banOf: createBanLookup(b.communities, o.nowSeconds),
    authRequired: o.config.authRequired,
    relayPubkey: (community) => communityKeys.of(community).pubkey,
    nowSeconds: o.nowSeconds,
  }
  // membership answered fresh from the store (no cache: a forwarded channel change is rare, a stale yes is not)
  const gateOf = (record: CommunityRecord) =>
    new AccessGate({
      community: record.id,
      channels: b.channels,
      record: () => record,
      allowedAmong: (pubkeys) => b.communities.allowedAmong(record.id, pubkeys),
      ttlMs: 0,
      nowMs: () => Date.now(),
    })
  const sinks: OwnerSinks = {
    events: b.postgresEvents,
    channels: b.channels,
    relayPubkey: (community) => communityKeys.of(community).pubkey,
    sign: (community, t, createdAt) => signAsRelay(communityKeys.of(community), t, createdAt),
    isModerator: (community, pubkey) =>
      pubkey === communityKeys.of(community).pubkey || (tenants.byId(community)?.admins.includes(pubkey) ?? false),
    judgeForwarded: (community, event, auth) => judgeForwardedWrite(community, event, auth, forwardedDeps),
    // never taken: this node's caches and the other nodes' fall back on their TTL (accessCacheTtlMs)
    invalidate: async (community, op) =>
      tellCommunity(community, { type: 'InvalidateCache', op, broadcast: true }, 'mesh: a cache invalidation never reached its community'),
    nowSeconds: o.nowSeconds,
    channelRules: o.config.channels,
    log: o.log,
  }
  return startMesh({
    config: o.config,
    kernel,
    redis: b.redis,
    relayKey: key,
    sinks,
    storedGeneration: (community, session) => b.channels.storedGeneration(community, session),
    deliver: (community, events) =>
      tellCommunity(community, { type: 'Announce', events, from: 'mesh' }, 'mesh: stored channel events not delivered here'),
    verifier: o.verifier,
    load: o.load,
    ready: () => !kernel.degraded,
    metrics: o.metrics,
    log: o.log,
  })
}

/** A mesh TLS file, read once at start; one that cannot be read stops the node with a ConfigError naming it. */
function readPem(config: Config, setting: 'meshTlsCertFile' | 'meshTlsKeyFile' | 'meshTlsCaFile'): string {
  try {
    return readFileSync(config[setting], 'utf8')
  } catch (error) {
    throw new ConfigError(`invalid config: ${setting}: cannot read ${config[setting]} (${(error as Error).message})`)
  }
}

/** `host[:port]` peers dial: the configured advertised address (its port defaulting to the bound one), else the bound address. */
function advertised(configured: string, bindHost: string, port: number): string {
  if (configured === '') return `${bindHost.includes(':') ? `[${bindHost}]` : bindHost}:${port}`
  return /:\d+$/.test(configured) && !/^\[[^\]]*\]$/.test(configured) ? configured : `${configured}:${port}`
}
