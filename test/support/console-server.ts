// The console's HTTP side on a real server on port 0, behind the relay's own router (handleHttp), with the real
// verifier, replay guard, sessions and operator auth, reading a FakeConsoleSource. Sign-in helpers sign with
// nostr-tools, as a NIP-07 extension would.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import { createMemoryReplayGuard } from '../../src/infra/gates/memory-replay-guard'
import { createClientAddressing } from '../../src/infra/http/client-ip'
import { loadConsoleAssets } from '../../src/infra/http/console/console-assets'
import { type ConsoleRoutes, createConsoleRoutes } from '../../src/infra/http/console/console-routes'
import type { StreamLimits } from '../../src/infra/http/console/console-stream'
import { handleHttp } from '../../src/infra/http/http-routes'
import { createOperatorAuth } from '../../src/infra/http/operator-auth'
import { createLogger } from '../../src/infra/log'
import { createMetrics, type Metrics } from '../../src/infra/metrics'
import { createMemoryConsoleSessions } from '../../src/infra/sessions/console-sessions'
import { createInlineVerifier } from '../../src/infra/verify/inline-verifier'
import type { ConsoleIdentity } from '../../src/protocols/console'
import type { FakeConsoleSource } from './console-source'

export interface ConsoleServer {
  origin: string
  port: number
  routes: ConsoleRoutes
  metrics: Metrics
  /** every log line the console wrote, parsed */
  logs: Record<string, unknown>[]
  close(): Promise<void>
}

export interface ConsoleServerOptions {
  sessionTtlSeconds?: number
  streamLimits?: StreamLimits
  /** sign-in calls the client IP may make (its `api` budget); unlimited when absent */
  apiBudget?: number
  nowMs?: () => number
  /** X-Forwarded-Proto and X-Forwarded-Host count (from any peer: no trustedProxies listed) */
  trustForwardedProto?: boolean
}

/** `source` undefined: a node that has no console source (the API answers 503). */
export async function startConsoleServer(source: FakeConsoleSource | undefined, o: ConsoleServerOptions = {}): Promise<ConsoleServer> {
  const logs: Record<string, unknown>[] = []
  const log = createLogger('info', { write: (s: string) => void logs.push(JSON.parse(s) as Record<string, unknown>) })
  const metrics = createMetrics()
  const addressing = createClientAddressing({
    trustedProxies: [],
    trustForwardedProto: o.trustForwardedProto ?? false,
    ipv6PrefixLength: 64,
  })
  const verifier = createInlineVerifier()
  const replayGuard = createMemoryReplayGuard()
  let budget = o.apiBudget ?? Number.POSITIVE_INFINITY
  const admitApiIp = async () => (budget-- > 0 ? { allowed: true as const } : { allowed: false as const, retryAfterMs: 1_000 })
  const nowMs = o.nowMs ?? Date.now
  const operator = createOperatorAuth({
    addressing,
    verifier,
    replayGuard,
    admitApiIp,
    isOperator: (p) => source?.isOperator(p) ?? false,
    metrics: { signatureChecks: metrics.nip86SignatureChecks, refused: metrics.operatorRequestsRefused },
    nowSeconds: () => Math.floor(nowMs() / 1000),
    log,
  })
  const routes = createConsoleRoutes({
    assets: loadConsoleAssets(),
    sessions: createMemoryConsoleSessions(nowMs),
    addressing,
    verifier,
    replayGuard,
    admitApiIp,
    operator,
    sessionTtlSeconds: o.sessionTtlSeconds ?? 1_800,
    streamLimits: o.streamLimits,
    metrics: { signIns: metrics.consoleSignIns, signatureChecks: metrics.nip86SignatureChecks },
    nowMs,
    log,
  })
  const server: Server = createServer((req, res) => {
    void handleHttp(req, res, {
      metrics,
      relayInfo: () => undefined,
      isKnownHost: () => false,
      health: async () => ({ ready: true, degraded: [] }),
      manage: async (_req, r) => void r.writeHead(404).end(),
      operator,
      console: routes,
      consoleSource: source,
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    routes,
    metrics,
    logs,
    async close() {
      routes.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

export interface Signer {
  secretKey: Uint8Array
  pubkey: string
}

export function newSigner(): Signer {
  const secretKey = generateSecretKey()
  return { secretKey, pubkey: getPublicKey(secretKey) }
}

/** A NIP-07-style sign-in: fetch a challenge, sign it as an extension would, post it. */
export async function signInWithExtension(origin: string, who: Signer): Promise<Response> {
  const { challenge } = (await (await fetch(`${origin}/console/api/challenge`, { method: 'POST' })).json()) as { challenge: string }
  return fetch(`${origin}/console/api/session`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ event: signSessionEvent(origin, who, challenge) }),
  })
}

export function signSessionEvent(origin: string, who: Signer, challenge: string, createdAt = Math.floor(Date.now() / 1000)) {
  const tags = [
    ['u', `${origin}/console/api/session`],
    ['method', 'POST'],
    ['challenge', challenge],
  ]
  return finalizeEvent({ kind: 27235, content: '', tags, created_at: createdAt }, who.secretKey)
}

export interface Session {
  cookie: string
  identity: ConsoleIdentity
}

/** Signed in through the extension path; throws unless the console accepted it. */
export async function signedIn(origin: string, who: Signer): Promise<Session> {
  const res = await signInWithExtension(origin, who)
  if (res.status !== 200) throw new Error(`sign-in refused: ${res.status} ${await res.text()}`)
  return { cookie: cookieFrom(res), identity: (await res.json()) as ConsoleIdentity }
}

/** `apiary_console=<token>` from a Set-Cookie. */
export const cookieFrom = (res: Response): string => (res.headers.get('set-cookie') ?? '').split(';')[0] ?? ''

export interface SseEvent {
  event: string
  data: string
}

export interface SseReader {
  status: number
  headers: Headers
  /** the next event (comments skipped); rejects when the stream ends first */
  next(): Promise<SseEvent>
  close(): void
}

/** `GET /console/api/stream?<query>` read as server-sent events. */
export async function openStream(origin: string, cookie: string, query: string): Promise<SseReader> {
  const abort = new AbortController()
  const res = await fetch(`${origin}/console/api/stream?${query}`, { headers: { cookie }, signal: abort.signal })
  const reader = res.body?.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const next = async (): Promise<SseEvent> => {
    for (;;) {
      const end = buffer.indexOf('\n\n')
      if (end !== -1) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const lines = block.split('\n').filter((l) => !l.startsWith(':'))
        if (lines.length === 0) continue
        const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2) ?? ''
        return { event: field('event') || 'message', data: field('data') }
      }
      const chunk = await reader?.read()
      if (chunk === undefined || chunk.done) throw new Error('stream ended')
      buffer += decoder.decode(chunk.value, { stream: true })
    }
  }
  return { status: res.status, headers: res.headers, next, close: () => abort.abort() }
}

/** A console answer's JSON, read loosely: each test asserts the shape it needs. */
// biome-ignore lint/suspicious/noExplicitAny: the tests read fields of answers whose shape they are checking
export const jsonOf = async (res: Response): Promise<any> => res.json()
