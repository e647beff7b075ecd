// The WebSocket edge: per-IP admission and host → community before the upgrade, then one connection actor
// per socket. Frames enter the actor's mailbox in arrival order, so a CLOSE can never overtake its REQ.
import { randomBytes } from 'node:crypto'
import type { IncomingMessage, Server } from 'node:http'
import type { Duplex } from 'node:stream'
import type { WebSocket, WebSocketServer } from 'ws'
import type { CommunityMsg } from '../actors/community/messages.js'
import { connectionActor, connectionPath, type MutableConnView } from '../actors/connection/connection-actor.js'
import { type Kernel, type TypedRef, tell } from '../actors/kernel/index.js'
import type { AdmissionAnswer, LimitType } from '../actors/principal/principal-actor.js'
import type { Config } from '../infra/config.js'
import type { RateLimiter } from '../infra/gates/rate-limit.js'
import { toCanonicalIp } from '../infra/http/nip86/moderation.js'
import type { Tenants } from '../infra/http/tenants.js'
import type { Logger } from '../infra/log.js'
import type { Metrics } from '../infra/metrics.js'
import { ipConnKey } from '../infra/redis/keys.js'
import type { CommunityRecord } from '../infra/store/community-store.js'
import type { Verifier } from '../infra/verify/verifier.js'
import { startHeartbeat, type Watched, watch } from '../infra/ws/heartbeat.js'
import { createOutboundQueue } from '../infra/ws/outbound-queue.js'
import { authFrame } from '../protocols/nip01/relay-message.js'

export interface GatewayDeps {
  http: Server
  wss: WebSocketServer
  kernel: Kernel
  config: Config
  tenants: Tenants
  limiter: RateLimiter
  /** node-local limits used while the shared gate backend is down, for what can't write */
  readFallback: RateLimiter
  verifier: Verifier
  admit: (record: CommunityRecord, principal: string, limit: LimitType, attested: boolean) => Promise<AdmissionAnswer>
  banOf: (community: string, pubkey: string) => Promise<{ reason: string } | undefined>
  /** NIP-86 blockip: this community refuses sockets from `ip` */
  isIpBlocked: (community: string, ip: string) => Promise<boolean>
  metrics: Metrics
  log: Logger
  nowSeconds: () => number
  communityRef: (id: string) => TypedRef<CommunityMsg> | undefined
}

/** Mailbox depth at which we stop reading a socket (TCP pushes back on the client) and where we resume. */
const PAUSE_AT_QUEUED = 1_000
const RESUME_AT_QUEUED = 100

/** Blocks are stored canonical (a dual-stack socket's ::ffff:a.b.c.d is a.b.c.d); so is the peer we look up. */
function canonical(ip: string): string {
  const c = toCanonicalIp(ip)
  return c.ok ? c.value : ip
}

function refuseUpgrade(socket: Duplex, status: number, text: string) {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: ${text.length + 1}\r\n\r\n${text}\n`)
}

export function acceptConnections(d: GatewayDeps) {
  const live = new Map<string, Watched>()
  let nextId = 0
  let closing = false
  const scheme = (req: IncomingMessage): 'ws' | 'wss' =>
    (req.socket as { encrypted?: boolean }).encrypted ||
    (d.config.trustForwardedProto && req.headers['x-forwarded-proto'] === 'https')
      ? 'wss'
      : 'ws'

  d.http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy())
    void onUpgrade(req, socket, head).catch((error: unknown) => {
      d.log.error({ err: error }, 'upgrade failed')
      refuseUpgrade(socket, 500, 'Internal Server Error')
    })
  })

  async function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
    if (closing) return refuseUpgrade(socket, 503, 'Service Unavailable')
    // a socket that already lost its peer address still gets a key (and is gone a moment later anyway)
    const ip = req.socket.remoteAddress ?? '0.0.0.0'
    // Per-IP admission comes before tenant resolution, so unknown hosts can't be used to probe for free.
    // With the shared gate down, a new socket is limited by this node alone: it can only read until Redis
    // returns (writes fail closed), and a node started during an outage must still serve reads.
    const rule = d.config.rateLimits.connectionsPerIp
    const admitted = await d.limiter
      .admit(ipConnKey(ip), rule)
      .catch(() => d.readFallback.admit(ipConnKey(ip), rule))
      .catch(() => ({ allowed: false as const, retryAfterMs: 1000 }))
    if (!admitted.allowed) {
      d.metrics.connectionsRefused.inc({ reason: 'rate-limited' })
      return refuseUpgrade(socket, 429, 'Too Many Requests')
    }
    const s = scheme(req)
    const host = d.config.trustForwardedProto ? ((req.headers['x-forwarded-host'] as string | undefined) ?? req.headers.host) : req.headers.host
    const tenant = d.tenants.resolve(host, s)
    const community = tenant && d.communityRef(tenant.record.id)
    if (!tenant || !community) {
      d.metrics.connectionsRefused.inc({ reason: 'unknown-host' })
      return refuseUpgrade(socket, 404, 'Not Found')
    }
    // a lookup that fails refuses too: a blocked address must not get in while the store is away
    const blocked = await d.isIpBlocked(tenant.record.id, canonical(ip)).catch(() => 'unavailable' as const)
    if (blocked) {
      d.metrics.connectionsRefused.inc({ reason: blocked === true ? 'ip-blocked' : 'unavailable' })
      return blocked === true ? refuseUpgrade(socket, 403, 'Forbidden') : refuseUpgrade(socket, 503, 'Service Unavailable')
    }
    d.wss.handleUpgrade(req, socket, head, (ws) => onOpen(ws, ip, `${s}://${tenant.host}`, tenant.record, community))
  }

  function onOpen(ws: WebSocket, ip: string, relayUrl: string, record: CommunityRecord, community: TypedRef<CommunityMsg>) {
    const id = String(++nextId)
    const path = connectionPath(id)
    d.metrics.connectionsTotal.inc()
    d.metrics.connectionsActive.inc()
    const queue = createOutboundQueue(ws, {
      maxPendingBytes: d.config.limits.maxPendingOutboundBytes,
      graceMs: d.config.limits.slowConsumerGraceMs,
      onSlowConsumer: () => {
        d.metrics.slowConsumerCloses.inc()
        d.log.warn({ conn: id, community: record.id }, 'slow consumer closed')
        ws.close(1008, 'error: slow consumer, outbound queue over its bound')
      },
    })
    const view: MutableConnView = { id, queue, authed: new Set(), owners: new Map(), attestations: new Map() }
    const challenge = randomBytes(16).toString('hex')
    let subsOpen = 0
    const ref = d.kernel.spawn(
      path,
      connectionActor({
        view,
        ws,
        ip,
        relayUrl,
        challenge,
        community: { id: record.id, ref: community },
        verifier: d.verifier,
        admit: (principal, limit, attested) => d.admit(record, principal, limit, attested),
        banOf: (pubkey) => d.banOf(record.id, pubkey),
        limits: d.config.limits,
        authRequired: d.config.authRequired,
        authWindowSeconds: d.config.timeouts.authWindowSeconds,
        nowSeconds: d.nowSeconds,
        metrics: d.metrics,
        log: d.log,
        onSubscriptionCount: (n) => {
          subsOpen = n
        },
      }),
    )
    const watched = watch(ws, Date.now, () => view.authed.size > 0 || subsOpen > 0)
    live.set(id, watched)
    tell(community, { type: 'Join', conn: view })
    queue.pushControl(authFrame(challenge))
    let paused = false
    ws.on('message', (data, isBinary) => {
      watched.lastFrameAtMs = Date.now()
      // NIP-01 speaks text frames; a binary frame is read as UTF-8 text rather than dropped.
      const text = isBinary || typeof data !== 'string' ? Buffer.from(data as Buffer).toString('utf8') : data
      if (!tell(ref, { type: 'Frame', text })) return ws.close(1008, 'error: too many messages in flight')
      const queued = d.kernel.stats(path)?.queued ?? 0
      if (!paused && queued >= PAUSE_AT_QUEUED) {
        paused = true
        ws.pause()
        const poll = setInterval(() => {
          if ((d.kernel.stats(path)?.queued ?? 0) <= RESUME_AT_QUEUED || ws.readyState !== ws.OPEN) {
            clearInterval(poll)
            paused = false
            ws.resume()
          }
        }, 5)
      }
    })
    // ws emits both 'error' and 'close' for a failed socket; cleanup hangs on 'close' only.
    ws.on('error', (error) => d.log.debug({ err: error, conn: id }, 'socket error'))
    ws.on('close', () => {
      live.delete(id)
      d.metrics.connectionsActive.dec()
      void d.kernel.stop(path)
    })
  }

  const stopHeartbeat = startHeartbeat({
    intervalMs: d.config.timeouts.pingIntervalMs,
    idleMs: d.config.timeouts.idleUnauthenticatedMs,
    nowMs: Date.now,
    sockets: () => live.values(),
  })

  return {
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
