// Plumbing for the tests of what the relay does per client IP: clients that pose as a reverse proxy (they
// send X-Forwarded-For from 127.0.0.1), the status of an upgrade the relay refuses, and addresses of a test's own.
import { randomBytes } from 'node:crypto'
import WebSocket from 'ws'
import type { TestRelay } from './relay'
import { connect, type TestClient } from './ws-client'

/** A client whose proxy (this test, on 127.0.0.1) says it is `ip`; `host` picks a community as in relay-client.ts `client`. */
export const viaProxy = (r: TestRelay, ip: string, host?: string): Promise<TestClient> =>
  connect(r.url, { headers: { 'X-Forwarded-For': ip }, ...(host ? { host: `${host}:${r.port}` } : {}) })

/** 101 when the relay upgrades (resolved once the socket is closed again), else the HTTP status it refused with. */
export function upgradeStatus(r: TestRelay, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(r.url, { headers })
    ws.once('open', () => {
      ws.once('close', () => resolve(101))
      ws.close()
    })
    ws.once('unexpected-response', (_req, res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    ws.once('error', (error) => reject(error))
  })
}

/**
 * A documentation address (2001:db8::/32, RFC 3849) of the caller's own: in cluster mode the per-IP keys are
 * global in the Redis every test file shares, so a test that counts per IP needs an address nobody else uses.
 */
export const testClientIp = () => `2001:db8:${randomBytes(6).toString('hex').match(/.{4}/g)?.join(':')}::1`
