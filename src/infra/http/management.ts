// NIP-86 relay management on `POST /` (DESIGN §10): NIP-98 auth against this community's URL, the
// signature, then the replay claim (DESIGN §6: never claim before verifying), then the operator check.
import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { NostrEvent } from '../../protocols/nip01/event'
import {
  isNip86Method,
  NIP86_CONTENT_TYPE,
  NIP86_METHODS,
  type Nip86Request,
  type Nip86Response,
  parseBanPubkeyParams,
  parseNip86Request,
  toNip86Error,
  toNip86Result,
} from '../../protocols/nip86'
import { checkNip98, nip98WindowSeconds } from '../../protocols/nip98'
import { type Reason, reason } from '../../protocols/reasons'
import { assertNever, err, ok, type Result } from '../../protocols/result'
import { minReplayTtlSeconds, type ReplayGuard } from '../gates/replay-guard'
import type { Logger } from '../log'
import type { BanRecord } from '../store/community-store'
import type { Verifier } from '../verify/verifier'
import type { Tenants } from './tenants'

export interface ManagementDeps {
  tenants: Tenants
  trustForwardedProto: boolean
  verifier: Verifier
  replayGuard: ReplayGuard
  /** configured operators and the relay's own pubkey */
  isOperator(pubkey: string): boolean
  /** the relay's ban path: the row, then the pubkey's sockets closed on every node */
  banPubkey(community: string, pubkey: string, reason: string): Promise<void>
  listBans(community: string): Promise<BanRecord[]>
  nowSeconds(): number
  log: Logger
}

// NIP-86 calls are a method name and a pubkey or two; 64 KiB is far beyond any and bounds what we buffer
// (and hash) before the caller is authenticated.
const MAX_BODY_BYTES = 65_536
// A ban row needs a reason and the banned socket gets it in its `blocked:` NOTICE; NIP-86's is optional.
const DEFAULT_BAN_REASON = 'banned by a relay operator'

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

type Refusal = { status: 401 | 403 | 500; why: Reason }

export function createManagement(d: ManagementDeps): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  /** The community bound to the Host the client used, and the URL it addressed (as the NIP-42 relay URL). */
  function target(req: IncomingMessage) {
    const secure = (req.socket as { encrypted?: boolean }).encrypted || (d.trustForwardedProto && req.headers['x-forwarded-proto'] === 'https')
    const scheme = secure ? 'https' : 'http'
    const host = d.trustForwardedProto ? ((req.headers['x-forwarded-host'] as string | undefined) ?? req.headers.host) : req.headers.host
    const tenant = d.tenants.resolve(host, scheme)
    return tenant && { community: tenant.record.id, url: `${scheme}://${tenant.host}${req.url ?? '/'}` }
  }

  async function authenticate(req: IncomingMessage, url: string, community: string, body: Buffer): Promise<Result<NostrEvent, Refusal>> {
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
      d.log.error({ err: error }, 'nip86: verifier failed')
      return err({ status: 500, why: reason('error', 'could not check the signature') })
    }
    if (verdict !== 'ok') return err({ status: 401, why: reason('invalid', verdict === 'bad-id' ? 'bad event id' : 'bad signature') })
    // only now: a forgery must not burn the id of a real operator's event
    let claim: 'claimed' | 'replayed'
    try {
      claim = await d.replayGuard.claim(community, event.id, minReplayTtlSeconds)
    } catch (error) {
      d.log.warn({ err: error }, 'nip86: replay guard unavailable; refusing')
      return err({ status: 401, why: reason('error', 'authorization unavailable, retry later') })
    }
    if (claim === 'replayed') return err({ status: 401, why: reason('invalid', 'auth event already used') })
    if (!d.isOperator(event.pubkey)) return err({ status: 403, why: reason('restricted', 'only relay operators may manage this relay') })
    return ok(event)
  }

  async function call(community: string, operator: string, request: Nip86Request): Promise<Nip86Response> {
    const { method, params } = request
    if (!isNip86Method(method)) return toNip86Error(reason('unsupported', `method ${method.slice(0, 64)}`))
    switch (method) {
      case 'supportedmethods':
        return toNip86Result([...NIP86_METHODS])
      case 'banpubkey': {
        const ban = parseBanPubkeyParams(params)
        if (!ban.ok) return toNip86Error(ban.error)
        await d.banPubkey(community, ban.value.pubkey, ban.value.reason ?? DEFAULT_BAN_REASON)
        d.log.info({ community, operator, pubkey: ban.value.pubkey }, 'nip86: pubkey banned')
        return toNip86Result(true)
      }
      case 'listbannedpubkeys': {
        const bans = await d.listBans(community)
        return toNip86Result(bans.map((b) => ({ pubkey: b.pubkey, reason: b.reason })))
      }
      default:
        return assertNever(method)
    }
  }

  return async function manage(req, res) {
    const where = target(req)
    if (!where) return void res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n')
    const body = await readBody(req, MAX_BODY_BYTES)
    if (body === undefined) return send(res, 413, toNip86Error(reason('invalid', `body larger than ${MAX_BODY_BYTES} bytes`)), { Connection: 'close' })
    const who = await authenticate(req, where.url, where.community, body)
    if (!who.ok) {
      const extra: Record<string, string> = who.error.status === 401 ? { 'WWW-Authenticate': 'Nostr' } : {}
      return send(res, who.error.status, toNip86Error(who.error.why), extra)
    }
    const request = parseNip86Request(body.toString('utf8'))
    if (!request.ok) return send(res, 400, toNip86Error(request.error))
    try {
      return send(res, 200, await call(where.community, who.value.pubkey, request.value))
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

/** The whole body, or undefined once it passes `maxBytes` (the rest is not read). */
function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length'] ?? 0) > maxBytes) return resolve(undefined)
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        req.removeAllListeners('data')
        req.pause()
        resolve(undefined)
      } else chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
}
