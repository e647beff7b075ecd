// Who may read a node's own detail (/mesh/status, /health/ready's `degraded`): a NIP-98 `GET` signed by an
// operator key (config operatorPubkeys and the relay key, as for NIP-86), charged to the client IP's `api`
// budget before any signature is checked, its event id claimed once. Everyone else learns ready or not.
import type { IncomingMessage } from 'node:http'
import { checkNip98, nip98WindowSeconds } from '../../protocols/nip98.js'
import { type Reason, reason } from '../../protocols/reasons.js'
import { err, OK_VOID, type Result } from '../../protocols/result.js'
import type { Admission } from '../gates/rate-limit.js'
import { type ReplayGuard, replayClaimTtlSeconds } from '../gates/replay-guard.js'
import type { Logger } from '../log.js'
import type { Verifier, VerifyVerdict } from '../verify/verifier.js'
import { type ClientAddressing, requestOrigin } from './client-ip.js'

export interface OperatorAuthDeps {
  addressing: ClientAddressing
  verifier: Verifier
  replayGuard: ReplayGuard
  admitApiIp(ip: string): Promise<Admission>
  isOperator(pubkey: string): boolean
  metrics: {
    signatureChecks: { inc(labels: { verdict: VerifyVerdict | 'error' }): void }
    refused: { inc(labels: { prefix: string }): void }
  }
  nowSeconds(): number
  log: Logger
}

export interface OperatorRefusal {
  status: 401 | 403 | 429 | 503
  why: Reason
}

// The claims of node-level requests share the replay guard's namespace of a community of this id: an event id
// names one event, whose `u` tag names one URL, so no claim here can collide with a NIP-86 call's.
const NODE_SCOPE = 'node'

export type OperatorAuth = (req: IncomingMessage) => Promise<Result<void, OperatorRefusal>>

export function createOperatorAuth(d: OperatorAuthDeps): OperatorAuth {
  const refuse = (status: OperatorRefusal['status'], why: Reason): Result<never, OperatorRefusal> => {
    d.metrics.refused.inc({ prefix: why.slice(0, why.indexOf(':')) })
    return err({ status, why })
  }
  return async (req) => {
    if (req.headers.authorization === undefined)
      return refuse(401, reason('auth-required', 'NIP-98 Authorization by an operator key required'))
    const admitted = await d.admitApiIp(d.addressing.principalOf(d.addressing.clientIp(req))).catch(() => undefined)
    if (admitted === undefined) return refuse(503, reason('rate-limited', 'admission unavailable'))
    if (!admitted.allowed) return refuse(429, reason('rate-limited', 'too many requests from this address'))
    const checked = checkNip98(req.headers.authorization, {
      url: requestUrl(req, d.addressing),
      method: 'GET',
      nowSeconds: d.nowSeconds(),
      windowSeconds: nip98WindowSeconds,
    })
    if (!checked.ok) return refuse(401, checked.error)
    const event = checked.value
    const verdict = await d.verifier.verify(event).catch((error: unknown) => {
      d.log.error({ err: error }, 'operator auth: verifier failed')
      return 'error' as const
    })
    d.metrics.signatureChecks.inc({ verdict })
    if (verdict !== 'ok') return refuse(401, reason('invalid', 'bad signature'))
    // an operator's key is checked last, after the claim: a non-operator's valid token still spends its id
    const claim = await d.replayGuard
      .claim(NODE_SCOPE, event.id, replayClaimTtlSeconds(nip98WindowSeconds))
      .catch(() => 'unavailable' as const)
    if (claim === 'unavailable') return refuse(503, reason('error', 'authorization unavailable, retry later'))
    if (claim === 'replayed') return refuse(401, reason('invalid', 'auth event already used'))
    if (!d.isOperator(event.pubkey)) return refuse(403, reason('restricted', 'only relay operators may read this'))
    return OK_VOID
  }
}

/** The absolute URL the client addressed, as NIP-98's `u` must name it (a trusted proxy's view when it has one). */
function requestUrl(req: IncomingMessage, addressing: ClientAddressing): string {
  const { secure, host } = requestOrigin(req, addressing)
  return `${secure ? 'https' : 'http'}://${host}${req.url ?? '/'}`
}
