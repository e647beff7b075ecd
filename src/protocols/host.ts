/**
 * The `Host` header picks the community before the WebSocket upgrade (docs/architecture.md §6.1), so two
 * spellings of one host must map to one key and anything odd must map to nothing (⇒ 404), never to a guess.
 */

export type HostScheme = 'ws' | 'wss' | 'http' | 'https'

const DEFAULT_PORT: Record<HostScheme, number> = { ws: 80, http: 80, wss: 443, https: 443 }
const MAX_HOST_LENGTH = 253 // RFC 1035 name length in text form
const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/
const IPV6 = /^[0-9a-f:.]+$/
const PORT = /^[0-9]{1,5}$/

/**
 * `Example.COM.:443` over wss → `example.com`; `[::1]:7777` → `[::1]:7777`. Undefined for empty or garbage:
 * whitespace, userinfo (`@`), a path, an empty or out-of-range port, more than one `:` outside brackets.
 * IPv6 text is lowercased but not re-compressed (`[0::1]` and `[::1]` stay distinct keys).
 */
export function normalizeHost(hostHeader: string | undefined, scheme: HostScheme): string | undefined {
  if (hostHeader === undefined) return undefined
  const text = hostHeader.toLowerCase()
  if (text === '' || /[\s@/\\?#]/.test(text)) return undefined
  const split = text.startsWith('[') ? splitBracketed(text) : splitPlain(text)
  if (split === undefined) return undefined
  const port = parsePort(split.port)
  if (port === null) return undefined
  return port === undefined || port === DEFAULT_PORT[scheme] ? split.host : `${split.host}:${port}`
}

interface HostAndPort {
  host: string
  port: string | undefined
}

function splitBracketed(text: string): HostAndPort | undefined {
  const close = text.indexOf(']')
  if (close < 0) return undefined
  const inner = text.slice(1, close)
  if (!inner.includes(':') || !IPV6.test(inner)) return undefined
  const rest = text.slice(close + 1)
  if (rest !== '' && !rest.startsWith(':')) return undefined
  return { host: `[${inner}]`, port: rest === '' ? undefined : rest.slice(1) }
}

function splitPlain(text: string): HostAndPort | undefined {
  const parts = text.split(':')
  if (parts.length > 2) return undefined
  let host = parts[0] ?? ''
  if (host.endsWith('.')) host = host.slice(0, -1)
  if (host === '' || host.length > MAX_HOST_LENGTH) return undefined
  if (!host.split('.').every((label) => LABEL.test(label))) return undefined
  return { host, port: parts[1] }
}

/** undefined: no port given; null: garbage. */
function parsePort(text: string | undefined): number | undefined | null {
  if (text === undefined) return undefined
  if (!PORT.test(text)) return null
  const port = Number(text)
  return port >= 1 && port <= 65_535 ? port : null
}
