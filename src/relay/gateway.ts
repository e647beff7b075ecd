// The WebSocket edge: per-IP admission and host → community before the upgrade, then one connection actor
// per socket. Frames enter the actor's mailbox in arrival order, so a CLOSE can never overtake its REQ.
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import type { WebSocket, WebSocketServer } from 'ws'
import type { CommunityMsg } from '../actors/community/messages.js'
import { createAuthSlots } from '../actors/connection/auth-slots.js'
import { connectionActor, connectionPath } from '../actors/connection/connection-actor.js'
import type { MutableConnView } from '../actors/connection/connection-deps.js'
import { type Kernel, MailboxFullError, type TypedRef, tell } from '../actors/kernel/index.js'
import { type AdmissionAnswer, ipPrincipalOf, type LimitType } from '../actors/principal/principal-actor.js'
import type { Config } from '../infra/config.js'
import type { ConsoleCounters } from '../infra/console/community-counters.js'
import type { MeteredConnection } from '../infra/console/hot-connections.js'
import type { ConnectionSlots } from '../infra/gates/connection-slots.js'
import type { ClientAddressing } from '../infra/http/client-ip.js'
import { relayHostOf, type Tenants } from '../infra/http/tenants.js'
import type { Logger } from '../infra/log.js'
import type { Metrics } from '../infra/metrics.js'
import type { CommunityRecord } from '../infra/store/community-store.js'
import type { Verifier } from '../infra/verify/verifier.js'
import { startHeartbeat, type Watched, watch } from '../infra/ws/heartbeat.js'
import { createInboundFlow } from '../infra/ws/inbound-flow.js'
import { createOutboundQueue } from '../infra/ws/outbound-queue.js'
import { TrafficMeter } from '../infra/ws/traffic-meter.js'
import { authFrame, closedFrame } from '../protocols/nip01/relay-message.js'
import { isNamedBy } from './admission.js'

export interface GatewayDeps {
  http: Server
  wss: WebSocketServer
  kernel: Kernel
  config: Config
  tenants: Tenants
  verifier: Verifier
  admit: (record: CommunityRecord, principal: string, limit: LimitType, attested: boolean) => Promise<AdmissionAnswer>
  /** a read stopped over its budget takes tokens from its principal's `reqs` budget (admission.ts) */
  chargeRead?: (record: CommunityRecord, principal: string, attested: boolean, rowsExamined: number) => void
  /** a new socket from `ip` against rateLimits.connectionsPerIp (admission.ts: its IP principal) */
  admitConnection: (ip: string) => Promise<AdmissionAnswer>
  /** an AUTH from `ip` against rateLimits.authPerIp (admission.ts: its IP principal) */
  admitAuth: (ip: string) => Promise<AdmissionAnswer>
  banOf: (community: string, pubkey: string) => Promise<{ reason: string } | undefined>
  /** those of `pubkeys` the community knows: admins, roster agents, allowed pubkeys (admission.ts `knownAmong`) */
  knownAmong: (community: string, pubkeys: readonly string[]) => Promise<Set<string>>
  /** NIP-86 blockip: this community refuses sockets from `ip` */
  isIpBlocked: (community: string, ip: string) => Promise<boolean>
  /** who the client is (the peer, or what a trusted proxy says) and whether proxy headers count (client-ip.ts) */
  addressing: ClientAddressing
  /** sockets open per client IP (limits.maxConnectionsPerIp): this node's embedded, the cluster's otherwise */
  connectionSlots: ConnectionSlots
  metrics: Metrics
  log: Logger
  nowSeconds: () => number
  communityRef: (id: string) => TypedRef<CommunityMsg> | undefined
  /** the console's per-community counts of accepted events and refusals */
  counters?: ConsoleCounters
}

const monotonicMs = () => performance.now()

function refuseUpgrade(socket: Duplex, status: number, text: string) {
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: ${text.length + 1}\r\n\r\n${text}\n`,
  )
}

export function acceptConnections(d: GatewayDeps) {
  const live = new Map<string, Watched>()
  // the same connections as the console's hot-connections sampler reads them
  const metered = new Map<string, MeteredConnection>()
  // node-wide: what a reconnect storm of every socket at once may put in front of admission, the AUTH
  // signature check and the ban lookup
  const authSlots = createAuthSlots(d.config.limits.maxConcurrentAuth)
  let nextId = 0
  let closing = false
  const scheme = (req: IncomingMessage): 'ws' | 'wss' =>
    (req.socket as { encrypted?: boolean }).encrypted ||
    (d.addressing.forwardedHeadersTrusted(req) && req.headers['x-forwarded-proto'] === 'https')
      ? 'wss'
      : 'ws'

  d.http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy())
    // an upgrade whose admission never ends (a gate that hangs) holds its socket no longer than a whole request
    // may; past the store's own deadline, so a stalled store is answered 503 rather than cut off
    const deadline = setTimeout(() => {
      d.metrics.httpConnectionsClosed.inc({ reason: 'timeout' })
      socket.destroy()
    }, d.config.timeouts.requestTimeoutMs)
    void onUpgrade(req, socket, head)
      .catch((error: unknown) => {
        d.log.error({ err: error }, 'upgrade failed')
        refuseUpgrade(socket, 500, 'Internal Server Error')
      })
      .finally(() => clearTimeout(deadline))
  })

  async function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    if (closing) return refuseUpgrade(socket, 503, 'Service Unavailable')
    // Canonical (blocks and keys are: a dual-stack socket's ::ffff:a.b.c.d is a.b.c.d), and behind a trusted
    // proxy the address it reports, so every gate below sees the client rather than the proxy.
    const ip = d.addressing.clientIp(req)
    // what the gates below count: the address, or for IPv6 its network (one budget per /64 by default)
    const principal = d.addressing.principalOf(ip)
    // Per-IP admission comes before tenant resolution, so unknown hosts can't be used to probe for free.
    // With the shared gate down, a new socket is limited by this node alone (the IP principal's fallback): it
    // can only read until Redis returns (writes fail closed), and a node started during an outage must still
    // serve reads. The IP's principal too busy to ask (its mailbox full: that IP is flooding) refuses as a full
    // bucket does; no answer for another reason is ours, and says so.
    const admitted = await d.admitConnection(principal).catch((error: unknown) => error)
    if (admitted instanceof Error && !(admitted instanceof MailboxFullError)) {
      d.log.warn({ err: admitted, ip }, 'connection admission failed')
      d.metrics.connectionsRefused.inc({ reason: 'unavailable' })
      return refuseUpgrade(socket, 503, 'Service Unavailable')
    }
    if (admitted instanceof Error || !(admitted as AdmissionAnswer).allowed) {
      d.metrics.connectionsRefused.inc({ reason: 'rate-limited' })
      return refuseUpgrade(socket, 429, 'Too Many Requests')
    }
    const s = scheme(req)
    const host = d.addressing.forwardedHeadersTrusted(req)
      ? ((req.headers['x-forwarded-host'] as string | undefined) ?? req.headers.host)
      : req.headers.host
    const tenant = d.tenants.resolve(host, s)
    const community = tenant && d.communityRef(tenant.record.id)
    if (!tenant || !community) {
      d.metrics.connectionsRefused.inc({ reason: 'unknown-host' })
      return refuseUpgrade(socket, 404, 'Not Found')
    }
    // a lookup that fails refuses too: a blocked address must not get in while the store is away
    const blocked = await d.isIpBlocked(tenant.record.id, ip).catch(() => 'unavailable' as const)
    if (blocked) {
      d.metrics.connectionsRefused.inc({ reason: blocked === true ? 'ip-blocked' : 'unavailable' })
      d.log.debug({ ip, community: tenant.record.id, blocked }, 'upgrade refused: ip')
      return blocked === true ? refuseUpgrade(socket, 403, 'Forbidden') : refuseUpgrade(socket, 503, 'Service Unavailable')
    }
    // last: a refusal above never takes a slot. The slot belongs to the TCP socket, whose 'close' comes
    // exactly once however it ends (ws closed, handshake aborted by ws, peer gone while we awaited).
    const slot = await d.connectionSlots.acquire(principal, d.config.limits.maxConnectionsPerIp)
    if (!slot) {
      d.metrics.connectionsRefused.inc({ reason: 'too-many-connections' })
      d.log.debug({ ip }, 'upgrade refused: too many connections from this ip')
      return refuseUpgrade(socket, 429, 'Too Many Requests')
    }
    socket.once('close', () => slot.release())
    if (socket.destroyed || closing) {
      slot.release()
      return void socket.destroy()
    }
    try {
      d.wss.handleUpgrade(req, socket, head, (ws) =>
        onOpen(ws, { ip, principal }, `${s}://${relayHostOf(tenant, req.socket.localPort)}`, tenant.record, community),
      )
    } catch (error) {
      slot.release()
      throw error
    }
  }

  /** `principal`: what the connection's unauthenticated requests are charged to (principalOf `ip`) */
  function onOpen(
    ws: WebSocket,
    { ip, principal }: { ip: string; principal: string },
    relayUrl: string,
    record: CommunityRecord,
    community: TypedRef<CommunityMsg>,
  ) {
    const openedAtMs = monotonicMs()
    const id = String(++nextId)
    const path = connectionPath(id)
    d.metrics.connectionsTotal.inc()
    d.metrics.connectionsActive.inc()
    const meter = new TrafficMeter(openedAtMs)
    const queue = createOutboundQueue(ws, {
      meter,
      maxPendingBytes: d.config.limits.maxPendingOutboundBytes,
      graceMs: d.config.limits.slowConsumerGraceMs,
      // the queue closes the socket itself (close frame, then destroy if the peer doesn't read up to it)
      onSlowConsumer: ({ code, reason, pendingBytes }) => {
        d.metrics.slowConsumerCloses.inc()
        d.log.warn({ conn: id, community: record.id, code, reason, pendingBytes }, 'slow consumer closed')
      },
    })
    const view: MutableConnView = {
      id,
      ip,
      queue,
      authed: new Set(),
      owners: new Map(),
      attestations: new Map(),
      lifted: new Set(),
      freshUntilMs: new Map(),
      subs: new Set(),
      // set once the actor exists (below): the community tells it when a subscription can't go on
      lose: () => {},
    }
    const flow = createInboundFlow(ws, d.config.limits.maxInboundBytesInFlight, () => d.metrics.inboundPauses.inc())
    const challenge = randomBytes(16).toString('hex')
    let subsOpen = 0
    const ref = d.kernel.spawn(
      path,
      connectionActor({
        view,
        ws,
        ip: principal,
        relayUrl,
        challenge,
        community: { id: record.id, ref: community },
        verifier: d.verifier,
        admit: (principal, limit, attested) => d.admit(record, principal, limit, attested),
        admitAuth: () => d.admitAuth(principal),
        banOf: (pubkey) => d.banOf(record.id, pubkey),
        knownAmong: (pubkeys) => d.knownAmong(record.id, pubkeys),
        named: (pubkey) => isNamedBy(d.tenants, record.id, pubkey),
        limits: d.config.limits,
        maxPubkeysPerConnection: d.config.limits.maxPubkeysPerConnection,
        freshKeyMs: d.config.rateLimits.freshKeySeconds * 1000,
        maxInboundBytesInFlight: d.config.limits.maxInboundBytesInFlight,
        authRequired: d.config.authRequired,
        authWindowSeconds: d.config.timeouts.authWindowSeconds,
        nowSeconds: d.nowSeconds,
        metrics: d.metrics,
        counters: d.counters?.of(record.id),
        log: d.log,
        onSubscriptionCount: (n) => {
          subsOpen = n
        },
        release: (bytes) => flow.release(bytes),
        authSlots,
        openedAtMs,
        nowMs: monotonicMs,
      }),
    )
    view.lose = (subId, why) => {
      if (tell(ref, { type: 'SubscriptionLost', subId, reason: why })) return
      // the actor can't take it (stopping, or its mailbox full): the client still hears, and the sub is gone
      if (view.subs.delete(subId)) queue.pushControl(closedFrame(subId, why))
    }
    // charged as its REQs are admitted (prepare.ts): the first authenticated pubkey at its tier, else the IP's principal
    view.chargeRead = (rows) => {
      const charged = view.authed.values().next().value ?? ipPrincipalOf(principal)
      d.chargeRead?.(record, charged, view.lifted.has(charged), rows)
    }
    // idleness is elapsed time: monotonic, so a wall-clock step can't close every quiet socket at once
    const watched = watch(ws, monotonicMs, () => view.authed.size > 0 || subsOpen > 0)
    live.set(id, watched)
    metered.set(id, { id, community: record.id, ip, meter, authed: view.authed, subs: view.subs })
    tell(community, { type: 'Join', conn: view })
    queue.pushControl(authFrame(challenge))
    ws.on('message', (data, isBinary) => {
      watched.lastFrameAtMs = monotonicMs()
      // NIP-01 speaks text frames; a binary frame is read as UTF-8 text rather than dropped.
      const raw = data as Buffer
      const text = isBinary || typeof data !== 'string' ? Buffer.from(raw).toString('utf8') : data
      // the bytes bound pauses the socket long before the mailbox could fill; a refusal is a stopped actor
      const bytes = flow.charge(typeof data === 'string' ? Buffer.byteLength(data) : raw.length)
      meter.frameIn(bytes)
      if (!tell(ref, { type: 'Frame', text, bytes })) {
        flow.release(bytes)
        ws.close(1011, 'error: connection is closing')
      }
    })
    // ws emits both 'error' and 'close' for a failed socket; cleanup hangs on 'close' only.
    ws.on('error', (error) => d.log.debug({ err: error, conn: id }, 'socket error'))
    ws.on('close', () => {
      live.delete(id)
      metered.delete(id)
      d.metrics.connectionsActive.dec()
      void d.kernel.stop(path)
    })
  }

  const stopHeartbeat = startHeartbeat({
    intervalMs: d.config.timeouts.pingIntervalMs,
    idleMs: d.config.timeouts.idleUnauthenticatedMs,
    nowMs: monotonicMs,
    sockets: () => live.values(),
  })

  return {
    /** open client connections on this node */
    get connections() {
      return live.size
    },
    /** the open connections with their traffic meters (the console's hot connections) */
    metered: (): Iterable<MeteredConnection> => metered.values(),
    /** Stop accepting, say goodbye with 1001 (going away), and wait for every connection actor to stop. */
    async close() {
      closing = true
      stopHeartbeat()
      for (const w of live.values()) w.ws.close(1001, 'relay shutting down')
      await d.kernel.stopPrefix('connection/')
      for (const w of live.values()) w.ws.terminate()
    },
  }
}
