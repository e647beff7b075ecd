import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { type HttpSurface, handleHttp } from '../../../src/infra/http/http-routes'
import type { MeshStatus } from '../../../src/protocols/mesh/status'

const STATUS: MeshStatus = {
  runtime: 'a1'.repeat(32),
  draining: false,
  peers: [{ runtime: 'b2'.repeat(32), endpoint: 'ws://10.0.0.2:7778', phi: 0.42, suspect: false, connected: true }],
  sessions: [{ community: 'default', session: 'channel:general', kind: 'channel', generation: 3, owner: 'a1'.repeat(32), local: true }],
}

/** The route function alone, over a real HTTP server; only the node's own endpoints are wired. */
describe('GET /mesh/status', () => {
  const servers: Server[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))))
  })

  async function serve(meshStatus: HttpSurface['meshStatus']): Promise<number> {
    const surface = {
      relayInfo: () => undefined,
      isKnownHost: (host: string | undefined) => host === 'hive.test',
      health: async () => ({ ready: true, degraded: [] }),
      manage: async () => {},
      ...(meshStatus === undefined ? {} : { meshStatus }),
    } as unknown as HttpSurface
    const server = createServer((req, res) => void handleHttp(req, res, surface))
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return (server.address() as AddressInfo).port
  }

  const get = (port: number, host = 'hive.test') =>
    new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
      const req = request({ port, host: '127.0.0.1', path: '/mesh/status', headers: { Host: host } }, (res) => {
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
})
