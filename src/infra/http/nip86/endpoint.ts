// NIP-86 relay management on `POST /` (architecture §8): the client IP's `api` budget (before anything costs us:
// a flood of forgeries must not spend the verifier pool EVENTs need), NIP-98 auth against this community's
// URL, the signature, then the replay claim (never claim before verifying), then the caller's
// `api` rate limit, then who may call what (the community's admins and the operators; some methods
// operators only: methods.ts).

import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { type AddressRange, isInRanges, parseTrustedProxies } from '../../../protocols/address-range.js'
import { NIP86_CONTENT_TYPE, type Nip86Response, parseNip86Request, toNip86Error } from '../../../protocols/nip86/methods.js'
import { checkNip98, nip98WindowSeconds } from '../../../protocols/nip98.js'
import { type Reason, reason } from '../../../protocols/reasons.js'
import { err, ok, type Result } from '../../../protocols/result.js'
import type { Admission } from '../../gates/rate-limit.js'
import { type ReplayGuard, replayClaimTtlSeconds } from '../../gates/replay-guard.js'
import type { Logger } from '../../log.js'
import type { CommunityRecord } from '../../store/community-store.js'
import type { Verifier, VerifyVerdict } from '../../verify/verifier.js'
import type { ClientAddressing } from '../client-ip.js'
import { readBody } from '../request-body.js'
import { relayHostOf, type Tenants } from '../tenants.js'
import { type Caller, callMethod, canManage, isAllowed, type ManagementOps } from './methods.js'

export interface ManagementDeps extends ManagementOps {
  tenants: Tenants
  /** the client's IP and whether X-Forwarded-Proto/Host count (client-ip.ts) */
  addressing: ClientAddressing
  verifier: Verifier
  replayGuard: ReplayGuard
  /** one call against `pubkey`'s `api` budget in this community (its tier's rule); rejects when the limiter fails */
  admitApi(record: CommunityRecord, pubkey: string): Promise<Admission>
  /** one call against the client IP's budget (rateLimits.apiPerIp), before any signature check; rejects when the limiter fails */
  admitApiIp(ip: string): Promise<Admission>
  /** NIP-86 blockip: this community refuses calls from `ip` (its blocked addresses and ranges) */
  isIpBlocked(community: string, ip: string): Promise<boolean>
  metrics: {
    /** every NIP-98 signature this endpoint had checked, by verdict (what a flood costs the verifier pool) */
    signatureChecks: { inc(labels: { verdict: VerifyVerdict | 'error' }): void }
    admissionRejections: { inc(labels: { type: string; reason: string }): void }
  }
  nowSeconds(): number
  log: Logger
}

const LOOPBACK = (parseTrustedProxies(['127.0.0.0/8', '::1']) as { ok: true; value: AddressRange[] }).value

// NIP-86 calls are a method name and a few short params; 64 KiB is far beyond any and bounds what we buffer
// (and hash) before the caller is authenticated.
const MAX_BODY_BYTES = 65_536

const HEADERS = {
  'Content-Type': NIP86_CONTENT_TYPE,
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'Authorization, *',
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
}

/** `POST` with `Content-Type: application/nostr+json+rpc` (parameters such as charset allowed). */
export function isManagementRequest(req: IncomingMessage): boolean {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase()
  return req.method === 'POST' && type === NIP86_CONTENT_TYPE
}

type Refusal = { status: 401 | 403 | 429 | 500 | 503; why: Reason; headers?: Record<string, string> }

export function createManagement(d: ManagementDeps): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  /**
   * The community bound to the Host the client used, and the URL its NIP-98 `u` must name: the NIP-42 relay
   * URL's rule (relayHostOf), so a Host with a port this node does not serve names the binding alone, and a
   * token signed for another port (another node's, or one made up) is refused as a wrong host is.
   */
  function target(req: IncomingMessage) {
    const forwarded = d.addressing.forwardedHeadersTrusted(req)
    const secure = (req.socket as { encrypted?: boolean }).encrypted || (forwarded && req.headers['x-forwarded-proto'] === 'https')
    const scheme = secure ? 'https' : 'http'
    const host = forwarded ? ((req.headers['x-forwarded-host'] as string | undefined) ?? req.headers.host) : req.headers.host
    const tenant = d.tenants.resolve(host, scheme)
    return tenant && { record: tenant.record, url: `${scheme}://${relayHostOf(tenant, req.socket.localPort)}${req.url ?? '/'}` }
  }

  async function authenticate(req: IncomingMessage, url: string, record: CommunityRecord, body: Buffer): Promise<Result<Caller, Refusal>> {
    const checked = checkNip98(req.headers.authorization, {
      url,
      method: 'POST',
      nowSeconds: d.nowSeconds(),
      windowSeconds: nip98WindowSeconds,
      bodySha256Hex: createHash('sha256').update(body).digest('hex'),
      requirePayload: true, // NIP-86: "except the payload tag is required"
    })
    if (!checked.ok) return err({ status: 401, why: checked.error })
    const event = checked.value
    let verdict: Awaited<ReturnType<Verifier['verify']>>
    try {
      verdict = await d.verifier.verify(event)
    } catch (error) {
      d.metrics.signatureChecks.inc({ verdict: 'error' })
      d.log.error({ err: error }, 'nip86: verifier failed')
      return err({ status: 500, why: reason('error', 'could not check the signature') })
    }
    d.metrics.signatureChecks.inc({ verdict })
    if (verdict !== 'ok') return err({ status: 401, why: reason('invalid', verdict === 'bad-id' ? 'bad event id' : 'bad signature') })
    // only now: a forgery must not burn the id of a real operator's event
    let claim: 'claimed' | 'replayed'
    try {
      claim = await d.replayGuard.claim(record.id, event.id, replayClaimTtlSeconds(nip98WindowSeconds))
    } catch (error) {
      d.log.warn({ err: error }, 'nip86: replay guard unavailable; refusing')
      return err({ status: 401, why: reason('error', 'authorization unavailable, retry later') })
    }
    if (claim === 'replayed') return err({ status: 401, why: reason('invalid', 'auth event already used') })
    // before the admin check: a signer who may not manage still spends its own budget probing
    const admitted = await admit(() => d.admitApi(record, event.pubkey))
    if (!admitted.ok) return admitted
    const caller = { pubkey: event.pubkey, operator: d.isOperator(event.pubkey) }
    if (!canManage(record, caller))
      return err({ status: 403, why: reason('restricted', "only this community's admins and relay operators may manage it") })
    return ok(caller)
  }

  /** architecture §8: the delay in the reason and in Retry-After; a limiter that fails refuses (fail closed). */
  async function admit(decide: () => Promise<Admission>): Promise<Result<void, Refusal>> {
    let a: Admission
    try {
      a = await decide()
    } catch (error) {
      d.log.warn({ err: error }, 'nip86: rate limiter unavailable; refusing')
      d.metrics.admissionRejections.inc({ type: 'api', reason: 'unavailable' })
      return err({ status: 503, why: reason('rate-limited', 'admission unavailable'), headers: { 'Retry-After': '1' } })
    }
    if (a.allowed) return ok(undefined)
    d.metrics.admissionRejections.inc({ type: 'api', reason: 'limit' })
    const seconds = Number.isFinite(a.retryAfterMs) ? Math.max(1, Math.ceil(a.retryAfterMs / 1000)) : 60
    return err({ status: 429, why: reason('rate-limited', `retry in ${seconds}s`), headers: { 'Retry-After': String(seconds) } })
  }

  return async function manage(req, res) {
    const where = target(req)
    if (!where) return void res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n')
    // First, before the body is read and hashed: every POST from this IP costs a token, so nothing a
    // forger sends reaches the verifier pool (or our sha256) faster than apiPerIp allows.
    const ip = d.addressing.clientIp(req)
    const byIp = await admit(() => d.admitApiIp(d.addressing.principalOf(ip)))
    if (!byIp.ok) {
      d.log.debug({ ip, status: byIp.error.status }, 'nip86: refused by the per-ip budget')
      return send(res, byIp.error.status, toNip86Error(byIp.error.why), byIp.error.headers)
    }
    // after the budget, which bounds the lookups one IP costs; a lookup that fails refuses, as at the upgrade. The
    // relay's own host is never refused: `apiary admin` there is how an operator undoes a block too wide.
    const blocked = isInRanges(ip, LOOPBACK) ? false : await d.isIpBlocked(where.record.id, ip).catch(() => 'unavailable' as const)
    if (blocked) {
      d.metrics.admissionRejections.inc({ type: 'api', reason: blocked === true ? 'ip-blocked' : 'unavailable' })
      d.log.debug({ ip, community: where.record.id }, 'nip86: refused, ip blocked')
      return blocked === true
        ? send(res, 403, toNip86Error(reason('blocked', 'this address is blocked')))
        : send(res, 503, toNip86Error(reason('error', 'could not check this address')), { 'Retry-After': '1' })
    }
    const body = await readBody(req, MAX_BODY_BYTES)
    if (body === undefined)
      return send(res, 413, toNip86Error(reason('invalid', `body larger than ${MAX_BODY_BYTES} bytes`)), { Connection: 'close' })
    const who = await authenticate(req, where.url, where.record, body)
    if (!who.ok) {
      const extra: Record<string, string> = who.error.status === 401 ? { 'WWW-Authenticate': 'Nostr' } : (who.error.headers ?? {})
      return send(res, who.error.status, toNip86Error(who.error.why), extra)
    }
    const request = parseNip86Request(body.toString('utf8'))
    if (!request.ok) return send(res, 400, toNip86Error(request.error))
    if (!isAllowed(request.value.method, who.value))
      return send(res, 403, toNip86Error(reason('restricted', `only relay operators may call ${request.value.method}`)))
    try {
      return send(res, 200, await callMethod(d, d.log, where.record.id, who.value, request.value))
    } catch (error) {
      d.log.error({ err: error, method: request.value.method }, 'nip86: call failed')
      return send(res, 500, toNip86Error(reason('error', 'management call failed')))
    }
  }
}

function send(res: ServerResponse, status: number, body: Nip86Response, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...HEADERS, ...extra })
  res.end(JSON.stringify(body))
}
