import type { NostrEvent } from './nip01/event.js'

/** NIP-40: the `expiration` tag as unix seconds, or undefined when absent or not an integer. */
export function expirationOf(e: Pick<NostrEvent, 'tags'>): number | undefined {
  for (const t of e.tags) {
    if (t[0] === 'expiration' && t[1] !== undefined && /^\d{1,15}$/.test(t[1])) return Number(t[1])
  }
  return undefined
}

export function isExpired(e: Pick<NostrEvent, 'tags'>, nowSeconds: number): boolean {
  const exp = expirationOf(e)
  return exp !== undefined && exp <= nowSeconds
}
