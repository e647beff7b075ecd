// How a failed connection attempt is classified: an AgentError ends the agent (error.ts); a Transient is worth
// another attempt after the backoff. The relay's NIP-01 prefix decides which (docs/agent-client.md, Retry rules).
import { prefixOf } from '../../protocols/reasons.js'
import { parseRetryAfterMs } from './backoff.js'
import { AgentError } from './error.js'
import type { OkAnswer } from './relay-socket.js'

/** A failure worth another connection attempt, after the backoff (and at least `retryAfterMs`). */
export class Transient extends Error {
  constructor(
    message: string,
    readonly retryAfterMs = 0,
  ) {
    super(message)
  }
}

/** Discovery found no relay answering NIP-11: counts toward maxDiscoveryRounds before the first ACTIVE. */
export class DiscoveryRoundFailed extends Transient {}

/**
 * What the relay closing the connection means: a ban (`blocked:`, community-cluster) is terminal, reconnecting
 * would only be refused again; the rest backs off, honouring `rate-limited: retry in Ns`.
 */
export function closeError(code: number, reason: string): AgentError | Transient {
  const why = `the relay closed the connection (${code}${reason ? ` ${reason}` : ''})`
  if (prefixOf(reason) === 'blocked') return new AgentError('blocked', `${why}: this key is banned here; ask the community's admins`)
  return new Transient(why, prefixOf(reason) === 'rate-limited' ? (parseRetryAfterMs(reason) ?? 0) : 0)
}

/** A refused AUTH or registration: `blocked:`/`restricted:`/`invalid:` are terminal; the rest back off. */
export function refusal(what: string, answer: OkAnswer, invalidCode: 'auth-rejected' | 'restricted'): AgentError | Transient {
  const prefix = prefixOf(answer.message)
  const text = `the relay refused ${what}: ${answer.message || '(no reason)'}`
  if (prefix === 'blocked') return new AgentError('blocked', `${text}; this key is banned here`)
  if (prefix === 'restricted') return new AgentError('restricted', `${text}; ask the community's admins for access`)
  if (prefix === 'invalid') return new AgentError(invalidCode, `${text}; check the key, the relay URL and the clock`)
  return new Transient(text, prefix === 'rate-limited' ? (parseRetryAfterMs(answer.message) ?? 0) : 0)
}
