// Everything under /console (docs/operating.md#the-console): the page and its files, sign-in and sign-out, the
// live stream, the JSON endpoints for scripts and moderation. Answered on any Host, like /health: the console
// is the node's. Every response carries the console's security headers (console-http.ts).
import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ConsoleIdentity } from '../../../protocols/console.js'
import { type Reason, reason } from '../../../protocols/reasons.js'
import { err, ok, type Result } from '../../../protocols/result.js'
import { type ConsoleSessions, isSessionToken, type StoredSession, tokenHashHex } from '../../sessions/console-sessions.js'
import type { OperatorAuth } from '../operator-auth.js'
import type { ConsoleAssets } from './console-assets.js'
import { CSRF_HEADER, cookieOf, isCrossSite, SESSION_COOKIE, sendConsole, sendJson, sendRefusal } from './console-http.js'
import { parseConsoleQuery } from './console-query.js'
import { buildSnapshot, newCursor } from './console-snapshot.js'
import type { ConsoleSource } from './console-source.js'
import { createStreamHub, DEFAULT_STREAM_LIMITS, type StreamLimits } from './console-stream.js'
import { moderate } from './moderation.js'
import { type Access, accessOf, narrowScope } from './scope.js'
import { createSignIn, type SignInDeps } from './sign-in.js'

export interface ConsoleRoutesDeps extends SignInDeps {
  assets: ConsoleAssets
  sessions: ConsoleSessions
  /** scripts may bring an operator's NIP-98 instead of a session (operator-auth.ts) */
  operator: OperatorAuth
  streamLimits?: StreamLimits
}

export interface ConsoleRoutes {
  /** `source` undefined: the node has no console source yet, and the API answers 503 */
  handle(req: IncomingMessage, res: ServerResponse, source: ConsoleSource | undefined): Promise<void>
  /** ends every open stream (the node is closing) */
  close(): void
}

type Refusal = { status: 401 | 403 | 429 | 503; why: Reason }
type Signed = { token: string; stored: StoredSession; access: Access }

export const isConsolePath = (path: string): boolean => path === '/console' || path.startsWith('/console/')

export function createConsoleRoutes(d: ConsoleRoutesDeps): ConsoleRoutes {
  const signIn = createSignIn(d)
  const hub = createStreamHub(d.streamLimits ?? DEFAULT_STREAM_LIMITS, d.nowMs, d.log)

  async function signedIn(req: IncomingMessage, source: ConsoleSource): Promise<Result<Signed, Refusal>> {
    const token = cookieOf(req, SESSION_COOKIE)
    if (token === undefined || !isSessionToken(token)) return err({ status: 401, why: reason('auth-required', 'sign in first') })
    const stored = await d.sessions.get(token).catch(() => 'unavailable' as const)
    if (stored === 'unavailable') return err({ status: 503, why: reason('error', 'sessions unavailable, retry later') })
    if (stored === undefined) return err({ status: 401, why: reason('auth-required', 'session expired or ended; sign in again') })
    const access = accessOf(source, stored.pubkey)
    if (access === undefined) return err({ status: 403, why: reason('restricted', 'no longer an operator or a community admin') })
    return ok({ token, stored, access })
  }

  /** A session cookie, or (scripts) an operator's NIP-98 `GET` in Authorization. */
  async function sessionOrOperator(req: IncomingMessage, source: ConsoleSource): Promise<Result<Access, Refusal>> {
    if (req.headers.authorization === undefined) {
      const signed = await signedIn(req, source)
      return signed.ok ? ok(signed.value.access) : signed
    }
    const operator = await d.operator(req)
    if (!operator.ok) return err(operator.error)
    return ok({ pubkey: '', role: 'operator', communities: source.communityIds(), scope: 'all' })
  }

  const hasCsrf = (req: IncomingMessage, s: Signed) => {
    const sent = Buffer.from(String(req.headers[CSRF_HEADER] ?? ''), 'utf8')
    const expected = Buffer.from(s.stored.csrf, 'utf8')
    return sent.length === expected.length && timingSafeEqual(sent, expected)
  }

  async function api(req: IncomingMessage, res: ServerResponse, source: ConsoleSource, route: string): Promise<void> {
    const method = req.method ?? 'GET'
    if (route === 'challenge' && method === 'POST') return signIn.challenge(req, res)
    if (route === 'session' && method === 'POST') return signIn.createSession(req, res, source)
    if (route === 'hot' || route === 'agents' || route === 'nodes') {
      if (method !== 'GET') return sendRefusal(res, 405, reason('invalid', 'GET only'))
      const who = await sessionOrOperator(req, source)
      if (!who.ok) return sendRefusal(res, who.error.status, who.error.why)
      return readForScripts(req, res, source, who.value, route, d.nowMs())
    }
    const signed = await signedIn(req, source)
    if (!signed.ok) return sendRefusal(res, signed.error.status, signed.error.why)
    const s = signed.value
    if (route === 'me' && method === 'GET') return sendJson(res, 200, identityOf(s))
    if (route === 'stream' && method === 'GET') return openStream(req, res, source, s)
    const changes = (route === 'session' && method === 'DELETE') || (route === 'moderate' && method === 'POST')
    if (!changes) return sendRefusal(res, 404, reason('invalid', 'no such console endpoint'))
    if (!hasCsrf(req, s)) return sendRefusal(res, 403, reason('restricted', `missing or wrong ${CSRF_HEADER} header`))
    if (route === 'moderate') return moderate(req, res, source, s.access, d.log)
    await d.sessions.end(s.token).catch((error: unknown) => d.log.warn({ err: error }, 'console: ending a session failed'))
    hub.endSession(tokenHashHex(s.token))
    d.log.info({ pubkey: s.access.pubkey }, 'console: signed out')
    sendConsole(res, 204, 'text/plain', '', { 'Set-Cookie': `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0` })
  }

  function openStream(req: IncomingMessage, res: ServerResponse, source: ConsoleSource, s: Signed) {
    const q = parseConsoleQuery(new URL(req.url ?? '/', 'http://x').searchParams)
    if (!q.ok) return sendRefusal(res, 400, q.error)
    const scope = narrowScope(s.access.scope, q.value.community)
    if (scope === undefined) return sendRefusal(res, 403, reason('restricted', 'you may not see this community'))
    const cursor = newCursor()
    hub.open(req, res, {
      session: tokenHashHex(s.token),
      expiresAtMs: s.stored.expiresAtMs,
      next: (nowMs) => buildSnapshot(source, scope, q.value, cursor, nowMs),
    })
  }

  return {
    async handle(req, res, source) {
      const path = (req.url ?? '/').split('?')[0] ?? '/'
      const method = req.method ?? 'GET'
      if (method === 'POST' || method === 'DELETE') {
        if (isCrossSite(req, d.addressing)) return sendRefusal(res, 403, reason('restricted', 'cross-site request'))
      }
      if (path === '/console' || path === '/console/') {
        if (method !== 'GET' && method !== 'HEAD') return sendRefusal(res, 405, reason('invalid', 'GET only'))
        return sendConsole(res, 200, d.assets.page.type, d.assets.page.body)
      }
      if (path.startsWith('/console/assets/')) {
        const asset = d.assets.files.get(path.slice('/console/assets/'.length))
        if (asset === undefined || (method !== 'GET' && method !== 'HEAD')) return sendConsole(res, 404, 'text/plain', 'not found\n')
        return sendConsole(res, 200, asset.type, asset.body, { 'Cache-Control': 'no-cache' })
      }
      if (!path.startsWith('/console/api/')) return sendConsole(res, 404, 'text/plain', 'not found\n')
      if (source === undefined) return sendRefusal(res, 503, reason('error', 'console unavailable'))
      return api(req, res, source, path.slice('/console/api/'.length))
    },
    close: () => hub.close(),
  }
}

function identityOf(s: Signed): ConsoleIdentity {
  const { pubkey, role, communities } = s.access
  return { pubkey, role, communities, csrf: s.stored.csrf, expiresAtMs: s.stored.expiresAtMs }
}

/** `/api/hot`, `/api/agents`, `/api/nodes`: the same data as the stream, once, as JSON. */
function readForScripts(
  req: IncomingMessage,
  res: ServerResponse,
  source: ConsoleSource,
  who: Access,
  route: 'hot' | 'agents' | 'nodes',
  nowMs: number,
) {
  const q = parseConsoleQuery(new URL(req.url ?? '/', 'http://x').searchParams)
  if (!q.ok) return sendRefusal(res, 400, q.error)
  const scope = narrowScope(who.scope, q.value.community)
  if (scope === undefined) return sendRefusal(res, 403, reason('restricted', 'you may not see this community'))
  // the communities view carries the nodes alone
  const snapshot = buildSnapshot(source, scope, { ...q.value, view: route === 'nodes' ? 'communities' : route }, newCursor(), nowMs)
  if (route === 'hot') return sendJson(res, 200, { node: source.node, rows: snapshot.hot?.rows ?? [] })
  if (route === 'agents') return sendJson(res, 200, snapshot.agents)
  return sendJson(res, 200, { node: source.node, nodes: snapshot.nodes })
}
