// The console's one-time sign-in link (docs/operating.md#the-console): a NIP-98 event (kind 27235) for
// `GET <relay>/console/login`, signed with an operator's key, carried in the page URL's fragment. A fragment is
// never sent to a server or written to its logs; the page posts it to the relay, which accepts it once, within
// NIP-98's 60 s.
import { randomBytes } from 'node:crypto'
import type { SigningKey } from '../protocols/nip01/sign.js'
import { signTemplate } from '../protocols/nip01/sign.js'
import { KIND_HTTP_AUTH } from '../protocols/nip98.js'

/** `http(s)://host[:port]` without a path, query or fragment (a trailing `/` is dropped); undefined otherwise. */
export function toConsoleOrigin(url: string): string | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined
  if (parsed.pathname !== '/' || parsed.search !== '' || parsed.hash !== '' || parsed.username !== '') return undefined
  return parsed.origin
}

/** `<origin>/console/#login=<base64url of the signed event>`; `origin` as toConsoleOrigin returns it. */
export function consoleLoginLink(origin: string, key: SigningKey, nowSeconds: number): string {
  const tags = [
    ['u', `${origin}/console/login`],
    ['method', 'GET'],
    // two links made in one second would otherwise be one event, and the relay accepts an event once
    ['nonce', randomBytes(8).toString('hex')],
  ]
  const event = signTemplate(key, { kind: KIND_HTTP_AUTH, content: '', tags }, nowSeconds)
  return `${origin}/console/#login=${Buffer.from(JSON.stringify(event), 'utf8').toString('base64url')}`
}
