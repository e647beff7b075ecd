// Signing in to the console (docs/operating.md#the-console): a NIP-07 extension signs a challenge this node
// handed out, or `apiary console login` signs a one-time link. Both are NIP-98 events (kind 27235) checked as
// NIP-98 asks (created_at ±60 s, `u`, `method`), then the signature, then the event id is claimed (one use),
// and only then the pubkey's role: a non-operator's valid event still spends its id. Every step after the
// first is charged to the client IP's `api` budget, as NIP-86 calls are.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ConsoleIdentity } from '../../../protocols/console.js'
import type { NostrEvent } from '../../../protocols/nip01/event.js'
import { checkNip98, nip98WindowSeconds } from '../../../protocols/nip98.js'
import { prefixOf, type Reason, reason } from '../../../protocols/reasons.js'
import { err, ok, type Result } from '../../../protocols/result.js'
import type { Admission } from '../../gates/rate-limit.js'
import { type ReplayGuard, replayClaimTtlSeconds } from '../../gates/replay-guard.js'
import type { Logger } from '../../log.js'
import { type ConsoleSessions, newChallengeHex, newSessionToken } from '../../sessions/console-sessions.js'
import type { Verifier, VerifyVerdict } from '../../verify/verifier.js'
import { type ClientAddressing, requestOrigin } from '../client-ip.js'
import { readJsonBody } from '../request-body.js'
import { SESSION_COOKIE, sendJson, sendRefusal } from './console-http.js'
import type { ConsoleSource } from './console-source.js'
import { accessOf } from './scope.js'

export interface SignInDeps {
  addressing: ClientAddressing
  verifier: Verifier
  replayGuard: ReplayGuard
  sessions: ConsoleSessions
  admitApiIp(ip: string): Promise<Admission>
  sessionTtlSeconds: number
  metrics: {
    signIns: { inc(labels: { outcome: string }): void }
    signatureChecks: { inc(labels: { verdict: VerifyVerdict | 'error' }): void }
  }
  nowMs(): number
  log: Logger
}

// A page fetches a challenge and asks the extension at once; two minutes leave room for the extension's prompt.
export const CHALLENGE_TTL_SECONDS = 120
// The console's claims share the replay guard with NIP-86's under a scope of their own: an event id names one
// event, whose `u` names one URL, so no claim here can collide with another endpoint's.
const CONSOLE_SCOPE = 'console'
// A signed event of a few tags is under 1 KiB; base64 of it well under 4.
const MAX_BODY_BYTES = 16_384
const HEX64 = /^[0-9a-f]{64}$/
const BASE64URL = /^[A-Za-z0-9_-]+$/

type Refusal = { status: 400 | 401 | 403 | 429 | 503; why: Reason }

export interface SignIn {
  challenge(req: IncomingMessage, res: ServerResponse): Promise<void>
  createSession(req: IncomingMessage, res: ServerResponse, source: ConsoleSource): Promise<void>
}

export function createSignIn(d: SignInDeps): SignIn {
  const refuse = (req: IncomingMessage, res: ServerResponse, r: Refusal) => {
    d.metrics.signIns.inc({ outcome: prefixOf(r.why) ?? 'error' })
    d.log.info({ ip: d.addressing.clientIp(req), status: r.status, why: r.why }, 'console: sign-in refused')
    sendRefusal(res, r.status, r.why)
  }

  async function admitIp(req: IncomingMessage): Promise<Result<void, Refusal>> {
    const admitted = await d.admitApiIp(d.addressing.principalOf(d.addressing.clientIp(req))).catch(() => undefined)
    if (admitted === undefined) return err({ status: 503, why: reason('rate-limited', 'admission unavailable') })
    if (!admitted.allowed) return err({ status: 429, why: reason('rate-limited', 'too many requests from this address') })
    return ok(undefined)
  }

  /** The checked, verified, claimed event of a sign-in body, or why not. */
  async function signedEvent(req: IncomingMessage, body: unknown): Promise<Result<NostrEvent, Refusal>> {
    const form = toAuthorization(body)
    if (!form.ok) return err({ status: 400, why: form.error })
    const { secure, host } = requestOrigin(req, d.addressing)
    const origin = `${secure ? 'https' : 'http'}://${host}`
    const checked = checkNip98(form.value.authorization, {
      url: `${origin}${form.value.path}`,
      method: form.value.method,
      nowSeconds: Math.floor(d.nowMs() / 1000),
      windowSeconds: nip98WindowSeconds,
    })
    if (!checked.ok) return err({ status: 401, why: checked.error })
    const event = checked.value
    const challenge = event.tags.find((t) => t[0] === 'challenge')?.[1]
    if (form.value.method === 'POST' && (challenge === undefined || !HEX64.test(challenge)))
      return err({ status: 401, why: reason('invalid', 'sign-in event has no challenge tag') })
    const verdict = await d.verifier.verify(event).catch((error: unknown) => {
      d.log.error({ err: error }, 'console: verifier failed')
      return 'error' as const
    })
    d.metrics.signatureChecks.inc({ verdict })
    if (verdict === 'error') return err({ status: 503, why: reason('error', 'could not check the signature') })
    if (verdict !== 'ok') return err({ status: 401, why: reason('invalid', 'bad signature') })
    const claim = await d.replayGuard
      .claim(CONSOLE_SCOPE, event.id, replayClaimTtlSeconds(nip98WindowSeconds))
      .catch(() => 'unavailable' as const)
    if (claim === 'unavailable') return err({ status: 503, why: reason('error', 'sign-in unavailable, retry later') })
    if (claim === 'replayed') return err({ status: 401, why: reason('invalid', 'this sign-in was already used') })
    if (challenge !== undefined && form.value.method === 'POST') {
      const taken = await d.sessions.takeChallenge(challenge).catch(() => 'unavailable' as const)
      if (taken === 'unavailable') return err({ status: 503, why: reason('error', 'sign-in unavailable, retry later') })
      if (!taken) return err({ status: 401, why: reason('invalid', 'unknown, expired or used challenge') })
    }
    return ok(event)
  }

  return {
    async challenge(req, res) {
      const admitted = await admitIp(req)
      if (!admitted.ok) return refuse(req, res, admitted.error)
      const challenge = newChallengeHex()
      const stored = await d.sessions.offerChallenge(challenge, CHALLENGE_TTL_SECONDS).then(
        () => true,
        () => false,
      )
      if (!stored) return refuse(req, res, { status: 503, why: reason('error', 'sign-in unavailable, retry later') })
      sendJson(res, 200, { challenge, expiresAtMs: d.nowMs() + CHALLENGE_TTL_SECONDS * 1000 })
    },

    async createSession(req, res, source) {
      const admitted = await admitIp(req)
      if (!admitted.ok) return refuse(req, res, admitted.error)
      const event = await signedEvent(req, await readJsonBody(req, MAX_BODY_BYTES))
      if (!event.ok) return refuse(req, res, event.error)
      const access = accessOf(source, event.value.pubkey)
      if (access === undefined)
        return refuse(req, res, { status: 403, why: reason('restricted', 'only relay operators and community admins may sign in') })
      const token = newSessionToken()
      const identity: ConsoleIdentity = {
        pubkey: access.pubkey,
        role: access.role,
        communities: access.communities,
        csrf: newSessionToken(),
        expiresAtMs: d.nowMs() + d.sessionTtlSeconds * 1000,
      }
      const stored = await d.sessions
        .put(token, { pubkey: identity.pubkey, csrf: identity.csrf, expiresAtMs: identity.expiresAtMs }, d.sessionTtlSeconds)
        .then(
          () => true,
          () => false,
        )
      if (!stored) return refuse(req, res, { status: 503, why: reason('error', 'sign-in unavailable, retry later') })
      d.metrics.signIns.inc({ outcome: 'ok' })
      d.log.info({ pubkey: identity.pubkey, role: identity.role, ip: d.addressing.clientIp(req) }, 'console: signed in')
      sendJson(res, 200, identity, { 'Set-Cookie': sessionCookie(token, d.sessionTtlSeconds, requestOrigin(req, d.addressing).secure) })
    },
  }
}

export function sessionCookie(token: string, maxAgeSeconds: number, secure: boolean): string {
  return `${SESSION_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/console; Max-Age=${maxAgeSeconds}${secure ? '; Secure' : ''}`
}

/** `{"event": {...}}` (NIP-07, POSTed here) or `{"token": "<base64url>"}` (a link, signed for GET /console/login). */
function toAuthorization(body: unknown): Result<{ authorization: string; path: string; method: 'GET' | 'POST' }> {
  if (typeof body !== 'object' || body === null) return err(reason('invalid', 'body must be {"event": ...} or {"token": ...}'))
  const { event, token } = body as { event?: unknown; token?: unknown }
  if (typeof event === 'object' && event !== null) {
    const b64 = Buffer.from(JSON.stringify(event), 'utf8').toString('base64')
    return ok({ authorization: `Nostr ${b64}`, path: '/console/api/session', method: 'POST' })
  }
  if (typeof token === 'string' && BASE64URL.test(token)) {
    const b64 = Buffer.from(token, 'base64url').toString('base64')
    return ok({ authorization: `Nostr ${b64}`, path: '/console/login', method: 'GET' })
  }
  return err(reason('invalid', 'body must be {"event": ...} or {"token": ...}'))
}
