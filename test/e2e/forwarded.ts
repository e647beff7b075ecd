// Plumbing for the tests of what the relay does per client IP: clients that pose as a reverse proxy (they
// send X-Forwarded-For from 127.0.0.1), the status of an upgrade the relay refuses, and labelled metrics.
import { randomBytes } from 'node:crypto'
import WebSocket from 'ws'
import type { TestRelay } from '../support/relay'
import { connect, type TestClient } from '../support/ws-client'
import { httpGet } from './helpers'

/** A client whose proxy (this test, on 127.0.0.1) says it is `ip`; `host` picks a community as in helpers.client. */
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

/** One Prometheus sample with exactly these labels among its own, 0 when absent. */
export async function labelledMetric(r: TestRelay, name: string, labels: Record<string, string>): Promise<number> {
  const { body } = await httpGet(r, '/metrics')
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`)
  let sum = 0
  for (const line of body.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line)
    if (!m || m[1] !== name) continue
    const have = (m[2] ?? '').split(',')
    if (wanted.every((w) => have.includes(w))) sum += Number(m[3])
  }
  return sum
}

/**
 * A documentation address (2001:db8::/32, RFC 3849) of the caller's own: in cluster mode the per-IP keys are
 * global in the Redis every test file shares, so a test that counts per IP needs an address nobody else uses.
 */
export const testClientIp = () => `2001:db8:${randomBytes(6).toString('hex').match(/.{4}/g)?.join(':')}::1`
