/**
 * NIP-01 machine-readable prefixes for OK and CLOSED messages. Every reason we send starts with one of
 * these; tests assert on the prefix, not on the human text.
 */
export const REASON_PREFIXES = [
  'duplicate',
  'pow',
  'blocked',
  'rate-limited',
  'invalid',
  'restricted',
  'mute',
  'auth-required',
  'error',
  'unsupported',
] as const

export type ReasonPrefix = (typeof REASON_PREFIXES)[number]
export type Reason = `${ReasonPrefix}: ${string}`

export const reason = (prefix: ReasonPrefix, text: string): Reason => `${prefix}: ${text}`

export function prefixOf(r: string): ReasonPrefix | undefined {
  const i = r.indexOf(':')
  if (i < 0) return undefined
  const p = r.slice(0, i)
  return (REASON_PREFIXES as readonly string[]).includes(p) ? (p as ReasonPrefix) : undefined
}
