// A NIP-86 client for the tests: signs NIP-98 headers the way a management client does, and posts the calls.
import { createHash, randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { finalizeEvent } from 'nostr-tools/pure'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import type { TestKeys } from './events'
import type { HttpAnswer } from './http'
import type { TestRelay } from './relay'

export const rpc = (method: string, params: unknown[] = []) => JSON.stringify({ method, params })

/** A NIP-98 `GET` of `url` by `keys`, fresh each call (a nonce tag): a node's operator-only endpoints claim its id. */
export const operatorGetHeader = (keys: TestKeys, url: string, created_at?: number) =>
  nip98Header(keys, url, '', { method: 'GET', payload: null, tags: [['nonce', randomBytes(8).toString('hex')]], created_at })

/** The URL a client addressing `host` on this relay signs into `u`. */
export const managementUrl = (r: TestRelay, host = '127.0.0.1') => `http://${host}:${r.port}/`

export const sha256Hex = (body: string) => createHash('sha256').update(body).digest('hex')

export interface Nip98Options {
  created_at?: number
  method?: string
  /** the payload tag's value; default the body's hash; null leaves the tag out */
  payload?: string | null
  /** more tags, e.g. a nonce that makes two tokens of one second two event ids */
  tags?: string[][]
}

export function nip98Event(keys: TestKeys, url: string, body: string, opts: Nip98Options = {}): NostrEvent {
  const tags = [
    ['u', url],
    ['method', opts.method ?? 'POST'],
  ]
  if (opts.payload !== null) tags.push(['payload', opts.payload ?? sha256Hex(body)])
  tags.push(...(opts.tags ?? []))
  return finalizeEvent({ kind: 27235, created_at: opts.created_at ?? Math.floor(Date.now() / 1000), tags, content: '' }, keys.secretKey)
}

export const authorizationOf = (e: NostrEvent) => `Nostr ${Buffer.from(JSON.stringify(e)).toString('base64')}`

/** The Authorization header for `body` posted to `url`. */
export const nip98Header = (keys: TestKeys, url: string, body: string, opts: Nip98Options = {}) =>
  authorizationOf(nip98Event(keys, url, body, opts))

export interface Nip86Answer extends HttpAnswer {
  json: { result?: unknown; error?: string }
}

/**
 * POST / with the NIP-86 content type, a Host of `host:hostPort` (default this relay's port; a cluster test
 * passes another node's, as a load balancer would show one public port), and the Authorization if given.
 */
export function postNip86(
  r: TestRelay,
  body: string,
  authorization?: string,
  host = '127.0.0.1',
  hostPort = r.port,
  extraHeaders: Record<string, string> = {},
): Promise<Nip86Answer> {
  const headers: Record<string, string> = {
    ...extraHeaders,
    Host: `${host}:${hostPort}`,
    'Content-Type': 'application/nostr+json+rpc',
    'Content-Length': String(Buffer.byteLength(body)),
  }
  if (authorization !== undefined) headers.Authorization = authorization
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: r.port, path: '/', method: 'POST', headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        text += d
      })
      res.on('end', () => {
        let json: Nip86Answer['json'] = {}
        try {
          json = JSON.parse(text) as Nip86Answer['json']
        } catch {}
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json })
      })
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Sign and post one call as `keys`, addressing `host`. */
export const callNip86 = (r: TestRelay, keys: TestKeys, method: string, params: unknown[] = [], host = '127.0.0.1') => {
  const body = rpc(method, params)
  return postNip86(r, body, nip98Header(keys, managementUrl(r, host), body), host)
}
