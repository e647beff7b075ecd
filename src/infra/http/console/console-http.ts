// What every console response carries, and the request details the console reads: its cookie, the origin the
// client addressed (a trusted proxy's view when it has one), and whether a call comes from another site.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Reason } from '../../../protocols/reasons.js'
import { type ClientAddressing, requestOrigin } from '../client-ip.js'

// Nothing from elsewhere: the page, its scripts, styles and data all come from this origin (the package ships
// them), so an injected string can neither load code nor send what it read anywhere.
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
}

export const SESSION_COOKIE = 'apiary_console'
export const CSRF_HEADER = 'x-apiary-csrf'

export function sendConsole(
  res: ServerResponse,
  status: number,
  type: string,
  body: string | Buffer,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, { ...CONSOLE_SECURITY_HEADERS, 'Content-Type': type, 'Cache-Control': 'no-store', ...extra })
  res.end(body)
}

export const sendJson = (res: ServerResponse, status: number, value: unknown, extra: Record<string, string> = {}): void =>
  sendConsole(res, status, 'application/json', `${JSON.stringify(value)}\n`, extra)

/** A refusal as `{"error": "<prefix>: ..."}` with its status. */
export const sendRefusal = (res: ServerResponse, status: number, why: Reason, extra: Record<string, string> = {}): void =>
  sendJson(res, status, { error: why }, extra)

export function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** A browser names the page's origin in `Origin` on every POST and DELETE; another host's is a cross-site call. */
export function isCrossSite(req: IncomingMessage, addressing: ClientAddressing): boolean {
  const origin = req.headers.origin
  if (origin === undefined) return false
  let host: string
  try {
    host = new URL(origin).host
  } catch {
    return true // `null` (a sandboxed frame, a file) or garbage: not this page
  }
  return host.toLowerCase() !== requestOrigin(req, addressing).host.toLowerCase()
}
