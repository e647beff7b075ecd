import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryReplayGuard } from '../../../src/infra/gates/memory-replay-guard'
import { createClientAddressing } from '../../../src/infra/http/client-ip'
import { type HttpSurface, handleHttp } from '../../../src/infra/http/http-routes'
import { createOperatorAuth } from '../../../src/infra/http/operator-auth'
import { createLogger } from '../../../src/infra/log'
import { createNobleVerifier } from '../../../src/infra/verify/inline-verifier'
import type { MeshStatus } from '../../../src/protocols/mesh/status'
import { makeKeys } from '../../support/events'
import { nip98Header, operatorGetHeader } from '../../support/nip86-client'

const operator = makeKeys()
const stranger = makeKeys()

const STATUS: MeshStatus = {
  runtime: 'a1'.repeat(32),
  draining: false,
  peers: [{ runtime: 'b2'.repeat(32), endpoint: 'ws://10.0.0.2:7778', phi: 0.42, suspect: false, connected: true }],
  sessions: [{ community: 'default', session: 'channel:general', kind: 'channel', generation: 3, owner: 'a1'.repeat(32), local: true }],
}

/** The route function alone, over a real HTTP server; only the node's own endpoints are wired. */
describe('GET /mesh/status and /health/ready', () => {
  const servers: Server[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))))
  })

  const refused: string[] = []
  async function serve(meshStatus: HttpSurface['meshStatus'], health = { ready: true, degraded: [] as string[] }): Promise<number> {
    const surface = {
      relayInfo: () => undefined,
      isKnownHost: (host: string | undefined) => host === 'hive.test',
      health: async () => health,
      manage: async () => {},
      operator: createOperatorAuth({
        addressing: createClientAddressing({ trustedProxies: [], trustForwardedProto: false, ipv6PrefixLength: 64 }),
        verifier: createNobleVerifier(),
        replayGuard: createMemoryReplayGuard(),
        admitApiIp: async () => ({ allowed: true }),
        isOperator: (pubkey) => pubkey === operator.pubkey,
        metrics: { signatureChecks: { inc: () => {} }, refused: { inc: ({ prefix }) => void refused.push(prefix) } },
        nowSeconds: () => Math.floor(Date.now() / 1000),
        log: createLogger('silent'),
      }),
      ...(meshStatus === undefined ? {} : { meshStatus }),
    } as unknown as HttpSurface
    const server = createServer((req, res) => void handleHttp(req, res, surface))
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return (server.address() as AddressInfo).port
  }

  /** GET `path` signed by `keys` (NIP-98 for http://<host><path>), or without Authorization when keys is null */
  const get = (port: number, host = 'hive.test', keys: typeof operator | string | null = operator, path = '/mesh/status') =>
    new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
      const headers: Record<string, string> = { Host: host }
      if (typeof keys === 'string') headers.Authorization = keys
      else if (keys) headers.Authorization = operatorGetHeader(keys, `http://${host}${path}`)
      const req = request({ port, host: '127.0.0.1', path, headers }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (d: string) => {
          body += d
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }))
      })
      req.on('error', reject)
      req.end()
    })

  it("answers 200 application/json with the node's status as one line of JSON", async () => {
    const port = await serve(() => STATUS)
    const res = await get(port)
    expect(res.status).toBe(200)
    expect(res.type).toBe('application/json')
    expect(res.body).toBe(`${JSON.stringify(STATUS)}\n`)
    expect(res.body).toBe(
      '{"runtime":"' +
        'a1'.repeat(32) +
        '","draining":false,"peers":[{"runtime":"' +
        'b2'.repeat(32) +
        '","endpoint":"ws://10.0.0.2:7778","phi":0.42,"suspect":false,"connected":true}],' +
        '"sessions":[{"community":"default","session":"channel:general","kind":"channel","generation":3,"owner":"' +
        'a1'.repeat(32) +
        '","local":true}]}\n',
    )
  })

  it('reads the status afresh on every request', async () => {
    let draining = false
    const port = await serve(() => ({ ...STATUS, draining }))
    expect(JSON.parse((await get(port)).body).draining).toBe(false)
    draining = true
    expect(JSON.parse((await get(port)).body).draining).toBe(true)
  })

  it('answers 404 {"error":"mesh is off"} when the node runs without a mesh', async () => {
    const port = await serve(undefined)
    const res = await get(port)
    expect(res.status).toBe(404)
    expect(res.type).toBe('application/json')
    expect(res.body).toBe('{"error":"mesh is off"}\n')
  })

  it("answers on any host name, as /metrics does: the status is the node's, not a community's", async () => {
    const port = await serve(() => STATUS)
    const res = await get(port, 'nowhere.test')
    expect(res.status).toBe(200)
    expect(res.body).toBe(`${JSON.stringify(STATUS)}\n`)
    expect((await get(await serve(undefined), 'nowhere.test')).body).toBe('{"error":"mesh is off"}\n')
  })

  it('names no session to a request without an operator’s NIP-98: 401 "auth-required:", 403 "restricted:" for another key, 401 "invalid:" for a replay, each counted', async () => {
    const port = await serve(() => STATUS)
    refused.length = 0
    const anonymous = await get(port, 'hive.test', null)
    expect(anonymous.status).toBe(401)
    expect(JSON.parse(anonymous.body).error).toMatch(/^auth-required: /)
    const other = await get(port, 'hive.test', stranger)
    expect(other.status).toBe(403)
    expect(JSON.parse(other.body).error).toMatch(/^restricted: /)
    for (const res of [anonymous, other]) expect(res.body).not.toContain('channel:general')
    // one token, twice: the second is a replay
    const token = nip98Header(operator, 'http://hive.test/mesh/status', '', { method: 'GET', payload: null })
    expect((await get(port, 'hive.test', token)).status).toBe(200)
    const again = await get(port, 'hive.test', token)
    expect(again.status).toBe(401)
    expect(JSON.parse(again.body).error).toMatch(/^invalid: /)
    expect(refused).toEqual(['auth-required', 'restricted', 'invalid'])
  })

  it('answers /health/ready with ready or not alone, and what is degraded only to an operator', async () => {
    const port = await serve(undefined, { ready: false, degraded: ['community/secret-club'] })
    const anonymous = await get(port, 'hive.test', null, '/health/ready')
    expect(anonymous.status).toBe(503)
    expect(anonymous.body).toBe('{"ready":false}\n')
    const stranger403 = await get(port, 'hive.test', stranger, '/health/ready')
    expect(stranger403.status).toBe(403)
    expect(stranger403.body).not.toContain('secret-club')
    const detail = await get(port, 'hive.test', operator, '/health/ready')
    expect(detail.status).toBe(503)
    expect(JSON.parse(detail.body)).toEqual({ ready: false, degraded: ['community/secret-club'] })
    expect((await get(await serve(undefined), 'hive.test', null, '/health/ready')).body).toBe('{"ready":true}\n')
  })
})
