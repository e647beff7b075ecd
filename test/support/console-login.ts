// The one-time link `apiary console login` prints: a kind 27235 event (NIP-98's shape) for GET <url>/console/login,
// its JSON base64url-encoded after `#login=`. Signed here with nostr-tools, as the CLI signs it.
import { randomBytes } from 'node:crypto'
import { finalizeEvent } from 'nostr-tools/pure'

export const HTTP_AUTH_KIND = 27235

export function consoleLoginToken(baseUrl: string, secretKey: Uint8Array, createdAtSeconds = Math.floor(Date.now() / 1000)): string {
  const event = finalizeEvent(
    {
      kind: HTTP_AUTH_KIND,
      created_at: createdAtSeconds,
      content: '',
      tags: [
        ['u', `${baseUrl}/console/login`],
        ['method', 'GET'],
        // two links signed in one second would otherwise be one event, which the relay accepts once
        ['nonce', randomBytes(8).toString('hex')],
      ],
    },
    secretKey,
  )
  return Buffer.from(JSON.stringify(event)).toString('base64url')
}

export const consoleLoginLink = (baseUrl: string, secretKey: Uint8Array): string =>
  `${baseUrl}/console/#login=${consoleLoginToken(baseUrl, secretKey)}`
