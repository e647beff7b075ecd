// A stand-in for the relay's console routes, written from their documented contract (docs/operating.md#the-console)
// and fed fixed documents, so the page can be driven in a browser on its own: sign-in by one-time link, the
// session cookie, the CSRF header, the live stream and moderation. The end-to-end tests use a real relay.
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { verifyEvent } from 'nostr-tools/pure'
import type { ConsoleIdentity, ConsoleSnapshot, ConsoleView } from '../../src/protocols/console'
import { CONSOLE_CSP, loadConsoleAssets } from './console-assets'
import { HTTP_AUTH_KIND } from './console-login'
import type { ConsoleWorld } from './console-world'

export interface ModerationCall {
  by: string
  community: string
  method: string
  params: unknown[]
}

export interface ConsoleStub {
  url: string
  /** every moderation call accepted, in order */
  calls: ModerationCall[]
  /** the query of every stream opened, in order */
  streams: URLSearchParams[]
  /** ends every session of `pubkey`: its streams get `event: expired` */
  expire(pubkey: string): void
  close(): Promise<void>
}

const SNAPSHOT_INTERVAL_MS = 1000
const SESSION_TTL_MS = 30 * 60 * 1000

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers })
  res.end(JSON.stringify(body))
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    return {}
  }
}

type SignedHttpAuth = { id: string; pubkey: string; kind: number; tags: string[][] }

const tag = (tags: string[][], name: string) => tags.find((t) => t[0] === name)?.[1]

export async function startConsoleStub(world: ConsoleWorld): Promise<ConsoleStub> {
  const { page, assets } = loadConsoleAssets()
  const sessions = new Map<string, ConsoleIdentity>()
  const usedTokens = new Set<string>()
  const challenges = new Set<string>()
  const calls: ModerationCall[] = []
  const streams: URLSearchParams[] = []
  const open = new Map<ServerResponse, ConsoleIdentity>()
  let url = ''

  const identityOf = (req: IncomingMessage) => {
    const cookie = /apiary_console=([^;]+)/.exec(req.headers.cookie ?? '')?.[1]
    return cookie ? sessions.get(cookie) : undefined
  }

  /** the event of a one-time link (`token`) or of an extension's answer to a challenge (`event`), if it holds */
  function signedEvent(body: Record<string, unknown>): SignedHttpAuth | undefined {
    try {
      const fromLink = body.token !== undefined
      const event: SignedHttpAuth = fromLink ? JSON.parse(Buffer.from(String(body.token), 'base64url').toString('utf8')) : body.event
      const [path, method] = fromLink ? ['/console/login', 'GET'] : ['/console/api/session', 'POST']
      const fits = event.kind === HTTP_AUTH_KIND && tag(event.tags, 'u') === `${url}${path}` && tag(event.tags, 'method') === method
      const challenged = fromLink || challenges.delete(tag(event.tags, 'challenge') ?? '')
      return fits && challenged && verifyEvent(event as never) && !usedTokens.has(event.id) ? event : undefined
    } catch {
      return undefined
    }
  }

  function signIn(body: Record<string, unknown>, res: ServerResponse) {
    const event = signedEvent(body)
    if (!event) return send(res, 401, { error: 'invalid: not a valid sign-in event' })
    usedTokens.add(event.id)
    const operator = world.operators.has(event.pubkey)
    const theirs = world.admins.get(event.pubkey)
    if (!operator && !theirs) return send(res, 403, { error: 'restricted: not an operator or a community admin' })
    const identity: ConsoleIdentity = {
      pubkey: event.pubkey,
      role: operator ? 'operator' : 'admin',
      communities: operator ? world.communities : theirs!,
      csrf: randomBytes(16).toString('hex'),
      expiresAtMs: Date.now() + SESSION_TTL_MS,
    }
    const cookie = randomBytes(32).toString('base64url')
    sessions.set(cookie, identity)
    send(res, 200, identity, { 'Set-Cookie': `apiary_console=${cookie}; HttpOnly; SameSite=Strict; Path=/console` })
  }

  function stream(req: IncomingMessage, res: ServerResponse, identity: ConsoleIdentity, query: URLSearchParams) {
    streams.push(query)
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', 'Content-Security-Policy': CONSOLE_CSP })
    open.set(res, identity)
    let first = true
    const tick = () => {
      if (res.writableEnded) return
      const snapshot: ConsoleSnapshot = world.snapshot(query.get('view') as ConsoleView, query, identity, first)
      first = false
      res.write(`event: snapshot\ndata: ${JSON.stringify(snapshot)}\n\n`)
    }
    tick()
    const timer = setInterval(tick, SNAPSHOT_INTERVAL_MS)
    req.on('close', () => {
      clearInterval(timer)
      open.delete(res)
    })
  }

  async function moderate(req: IncomingMessage, res: ServerResponse, identity: ConsoleIdentity) {
    if (req.headers['x-apiary-csrf'] !== identity.csrf) return send(res, 403, { error: 'restricted: missing or wrong CSRF token' })
    const body = await readJson(req)
    const call = { by: identity.pubkey, community: String(body.community), method: String(body.method), params: body.params as unknown[] }
    if (!identity.communities.includes(call.community)) return send(res, 403, { error: 'restricted: not your community' })
    if (call.method === 'archivecommunity' && identity.role !== 'operator') return send(res, 403, { error: 'restricted: operators only' })
    calls.push(call)
    send(res, 200, { result: true })
  }

  async function route(req: IncomingMessage, res: ServerResponse) {
    const u = new URL(req.url ?? '/', url)
    res.setHeader('Content-Security-Policy', CONSOLE_CSP)
    res.setHeader('X-Content-Type-Options', 'nosniff')
    if (req.method === 'GET' && (u.pathname === '/console' || u.pathname === '/console/')) {
      res.writeHead(200, { 'Content-Type': page.type })
      return res.end(page.body)
    }
    const asset = u.pathname.startsWith('/console/assets/') ? assets.get(u.pathname.slice('/console/assets/'.length)) : undefined
    if (req.method === 'GET' && asset) {
      res.writeHead(200, { 'Content-Type': asset.type })
      return res.end(asset.body)
    }
    if (req.method === 'POST' && u.pathname === '/console/api/session') return signIn(await readJson(req), res)
    if (req.method === 'POST' && u.pathname === '/console/api/challenge') {
      const challenge = randomBytes(16).toString('hex')
      challenges.add(challenge)
      return send(res, 200, { challenge, expiresAtMs: Date.now() + 120_000 })
    }
    const identity = identityOf(req)
    if (!identity) return send(res, 401, { error: 'auth-required: sign in first' })
    if (req.method === 'GET' && u.pathname === '/console/api/me') return send(res, 200, identity)
    if (req.method === 'DELETE' && u.pathname === '/console/api/session') {
      expire(identity.pubkey)
      return send(res, 200, {})
    }
    if (req.method === 'GET' && u.pathname === '/console/api/stream') return stream(req, res, identity, u.searchParams)
    if (req.method === 'POST' && u.pathname === '/console/api/moderate') return moderate(req, res, identity)
    send(res, 404, { error: 'invalid: no such path' })
  }

  function expire(pubkey: string) {
    for (const [cookie, identity] of sessions) if (identity.pubkey === pubkey) sessions.delete(cookie)
    for (const [res, identity] of open) {
      if (identity.pubkey !== pubkey) continue
      res.end('event: expired\ndata: {}\n\n')
      open.delete(res)
    }
  }

  const server = createServer((req, res) => void route(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    calls,
    streams,
    expire,
    async close() {
      for (const res of open.keys()) res.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
