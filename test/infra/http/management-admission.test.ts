import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryRateLimiter } from '../../../src/infra/gates/memory-rate-limit'
import { createMemoryReplayGuard } from '../../../src/infra/gates/memory-replay-guard'
import { GateError } from '../../../src/infra/gates/rate-limit'
import { createClientAddressing } from '../../../src/infra/http/client-ip'
import { createManagement, type ManagementDeps } from '../../../src/infra/http/nip86/endpoint'
import type { ManagementOps } from '../../../src/infra/http/nip86/methods'
import { Tenants } from '../../../src/infra/http/tenants'
import { createLogger } from '../../../src/infra/log'
import { type CommunityRecord, DEFAULT_SETTINGS } from '../../../src/infra/store/community-store'
import { prefixOf } from '../../../src/protocols/reasons'
import { makeKeys } from '../../support/events'
import { nip98Header, postNip86, rpc } from '../../support/nip86-client'
import type { TestRelay } from '../../support/relay'

const operator = makeKeys()
const RECORD: CommunityRecord = {
  id: 'default',
  name: 'default',
  hosts: ['127.0.0.1'],
  agents: [],
  admins: [],
  settings: DEFAULT_SETTINGS,
  kinds: { allowed: [], disallowed: [] },
}

/** The management endpoint alone, over a real HTTP server, with the admission step under the test's control. */
describe('admitting NIP-86 calls through the api rate limit', () => {
  const servers: Server[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))))
  })

  async function serve(
    admitApi: ManagementDeps['admitApi'],
    more: Partial<Pick<ManagementDeps, 'admitApiIp' | 'verifier'>> = {},
  ): Promise<TestRelay> {
    const ops = { isOperator: (p: string) => p === operator.pubkey } as unknown as ManagementOps
    const manage = createManagement({
      ...ops,
      tenants: new Tenants([RECORD]),
      addressing: createClientAddressing({ trustedProxies: [], trustForwardedProto: false, ipv6PrefixLength: 64 }),
      verifier: { verify: async () => 'ok', threads: 1, close: async () => {} },
      replayGuard: createMemoryReplayGuard(),
      admitApi,
      admitApiIp: async () => ({ allowed: true }),
      isIpBlocked: async () => false,
      ...more,
      metrics: { signatureChecks: { inc: () => {} }, admissionRejections: { inc: () => {} } },
      nowSeconds: () => Math.floor(Date.now() / 1000),
      log: createLogger('silent'),
    })
    const server = createServer((req, res) => void manage(req, res))
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return { port: (server.address() as AddressInfo).port } as TestRelay
  }

  const call = (r: TestRelay, n: number) => {
    const body = JSON.stringify({ id: n, method: 'supportedmethods', params: [] })
    return postNip86(r, body, nip98Header(operator, `http://127.0.0.1:${r.port}/`, body))
  }

  it('answers 503 rate-limited: admission unavailable while the limiter fails, even for an operator', async () => {
    const r = await serve(async () => {
      throw new GateError('redis down')
    })
    const a = await call(r, 1)
    expect(a.status).toBe(503)
    expect(a.json).toEqual({ result: null, error: 'rate-limited: admission unavailable' })
  })

  it('answers 429 with Retry-After in whole seconds, rounded up, once the limiter refuses', async () => {
    const limiter = createMemoryRateLimiter()
    const r = await serve((record, pubkey) => limiter.admit(`${record.id}:${pubkey}`, { ratePerSecond: 0.4, burst: 1 }))
    expect((await call(r, 1)).status).toBe(200)
    const refused = await call(r, 2)
    expect(refused.status).toBe(429)
    expect(refused.headers['retry-after']).toBe('3') // 2.5 s to the next token
    expect(refused.json).toEqual({ result: null, error: 'rate-limited: retry in 3s' })
  })

  it('checks the auth header before spending the budget: a replayed header costs nothing', async () => {
    let admitted = 0
    const r = await serve(async () => {
      admitted++
      return { allowed: true }
    })
    const body = rpc('supportedmethods')
    const header = nip98Header(operator, `http://127.0.0.1:${r.port}/`, body)
    expect((await postNip86(r, body, header)).status).toBe(200)
    const replayed = await postNip86(r, body, header)
    expect(replayed.status).toBe(401)
    expect(prefixOf(replayed.json.error ?? '')).toBe('invalid')
    expect(admitted).toBe(1)
  })

  describe('the per-IP budget, charged before the signature is checked', () => {
    /** a verifier that counts what it is asked and calls every signature good */
    const countingVerifier = () => {
      const v = {
        asked: 0,
        threads: 1,
        close: async () => {},
        verify: async () => {
          v.asked++
          return 'ok' as const
        },
      }
      return v
    }

    it('answers 429 with Retry-After and rate-limited: past the budget, and never asks the verifier', async () => {
      const limiter = createMemoryRateLimiter()
      const verifier = countingVerifier()
      const ips: string[] = []
      const r = await serve(async () => ({ allowed: true }), {
        verifier,
        admitApiIp: (ip) => {
          ips.push(ip)
          return limiter.admit(`ip:${ip}`, { ratePerSecond: 0.5, burst: 2 })
        },
      })
      const answers = [await call(r, 1), await call(r, 2), await call(r, 3)]
      expect(answers.map((a) => a.status)).toEqual([200, 200, 429])
      expect(answers[2]?.headers['retry-after']).toBe('2')
      expect(prefixOf(answers[2]?.json.error ?? '')).toBe('rate-limited')
      expect(verifier.asked).toBe(2)
      expect(ips).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1'])
    })

    it('charges a request even without an Authorization header, so nothing is free to send', async () => {
      let charged = 0
      const r = await serve(async () => ({ allowed: true }), {
        admitApiIp: async () => (++charged <= 1 ? { allowed: true } : { allowed: false, retryAfterMs: 1000 }),
      })
      expect((await postNip86(r, rpc('supportedmethods'))).status).toBe(401)
      expect((await postNip86(r, rpc('supportedmethods'))).status).toBe(429)
    })

    it('answers 503 rate-limited: admission unavailable when the per-IP limiter fails, and never asks the verifier', async () => {
      const verifier = countingVerifier()
      const r = await serve(async () => ({ allowed: true }), {
        verifier,
        admitApiIp: async () => {
          throw new GateError('redis down')
        },
      })
      const a = await call(r, 1)
      expect(a.status).toBe(503)
      expect(a.headers['retry-after']).toBe('1')
      expect(a.json).toEqual({ result: null, error: 'rate-limited: admission unavailable' })
      expect(verifier.asked).toBe(0)
    })
  })
})
