import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getPublicKey } from 'nostr-tools/pure'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runMesh } from '../../src/cli/mesh'
import type { MeshStatus } from '../../src/protocols/mesh/status'
import { apiary } from '../support/cli'

const OPERATOR_SECRET = '11'.repeat(32)
const ENV = { APIARY_ADMIN_KEY: OPERATOR_SECRET }
const SELF = '0123456789abcdef'.repeat(4)
const PEER = 'fedcba9876543210'.repeat(4)
const STATUS: MeshStatus = {
  runtime: SELF,
  draining: false,
  peers: [
    { runtime: PEER, endpoint: 'ws://10.0.0.2:7778', phi: 0.4236, suspect: false, connected: true },
    { runtime: 'ab'.repeat(32), endpoint: 'wss://node-3.hive.test/mesh', phi: 12, suspect: true, connected: false },
  ],
  sessions: [
    { community: 'default', session: 'channel:general', kind: 'channel', generation: 3, owner: SELF, local: true },
    { community: 'hive', session: 'channel:back-room', kind: 'channel', generation: 12, owner: PEER, local: false },
  ],
}
/** what the relay sends (http-routes.ts): the document and a newline */
const BODY = `${JSON.stringify(STATUS)}\n`

const TABLE = `runtime ${SELF} draining no
peers:
  fedcba9876543210  ws://10.0.0.2:7778  phi 0.42  connected
  abababababababab  wss://node-3.hive.test/mesh  phi 12.00  disconnected  suspect
sessions:
  default/channel:general  channel  gen 3  owner 0123456789abcdef  local
  hive/channel:back-room  channel  gen 12  owner fedcba9876543210  remote
`

describe('apiary mesh status', () => {
  /** what the fake relay answers on /mesh/status; a test sets it before it calls */
  let answer = { status: 200, type: 'application/json', body: BODY }
  const paths: string[] = []
  const authorizations: (string | undefined)[] = []
  let server: Server
  let url: string
  beforeAll(async () => {
    server = createServer((req, res) => {
      paths.push(req.url ?? '')
      authorizations.push(req.headers.authorization)
      if (req.url !== '/mesh/status') return void res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n')
      res.writeHead(answer.status, { 'Content-Type': answer.type }).end(answer.body)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(() => new Promise((resolve) => server.close(resolve)))
  const serving = (status: number, body: string, type = 'application/json') => {
    answer = { status, type, body }
  }

  it('prints the runtime, one line per peer and one per session, as a table', async () => {
    serving(200, BODY)
    expect(await inProcess(() => runMesh(['status', '--url', url], ENV))).toEqual({ code: 0, stdout: TABLE, stderr: '' })
    expect(paths.at(-1)).toBe('/mesh/status')
    // the status is an operator's to read: a NIP-98 GET of that URL signed with the key
    const event = JSON.parse(Buffer.from((authorizations.at(-1) ?? '').replace(/^Nostr /, ''), 'base64').toString('utf8'))
    expect(event).toMatchObject({ kind: 27235, pubkey: getPublicKey(Uint8Array.from(Buffer.from(OPERATOR_SECRET, 'hex'))) })
    expect(event.tags).toEqual(
      expect.arrayContaining([
        ['u', `${url}mesh/status`],
        ['method', 'GET'],
      ]),
    )
  })

  it('exits 2 with the usage when no operator key is given', async () => {
    const out = await inProcess(() => runMesh(['status', '--url', url], {}))
    expect(out).toMatchObject({ code: 2, stderr: expect.stringMatching(/^apiary mesh: --key \(or APIARY_ADMIN_KEY\)/) })
  })

  it('says draining yes, and prints the section headers even with no peers or sessions', async () => {
    serving(200, JSON.stringify({ runtime: SELF, draining: true, peers: [], sessions: [] }))
    const out = await inProcess(() => runMesh(['status', '--url', url.slice(0, -1)], ENV))
    expect(out).toEqual({ code: 0, stdout: `runtime ${SELF} draining yes\npeers:\nsessions:\n`, stderr: '' })
  })

  it('prints the JSON exactly as the relay sent it with --json', async () => {
    serving(200, BODY)
    expect(await inProcess(() => runMesh(['status', '--json', '--url', url], ENV))).toEqual({ code: 0, stdout: BODY, stderr: '' })
  })

  it('exits 1 with "mesh is off at <url>" when the relay runs without a mesh', async () => {
    serving(404, '{"error":"mesh is off"}\n')
    for (const argv of [
      ['status', '--url', url],
      ['status', '--json', '--url', url],
    ]) {
      expect(await inProcess(() => runMesh(argv, ENV))).toEqual({ code: 1, stdout: '', stderr: `apiary mesh: mesh is off at ${url}\n` })
    }
  })

  it('exits 1 with the HTTP status for any other refusal, such as a 404 from a server without the route', async () => {
    serving(404, 'not found\n', 'text/plain')
    expect(await inProcess(() => runMesh(['status', '--url', url], ENV))).toEqual({
      code: 1,
      stdout: '',
      stderr: 'apiary mesh: HTTP 404: not found\n',
    })
  })

  it('exits 1 with "invalid:" when the answer is not a mesh status, and prints nothing on stdout', async () => {
    for (const body of ['{"runtime":"node-1","draining":false,"peers":[],"sessions":[]}', '<html>proxy error</html>']) {
      serving(200, body)
      for (const json of [[], ['--json']]) {
        const out = await inProcess(() => runMesh(['status', ...json, '--url', url], ENV))
        expect(out).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/^apiary mesh: invalid: /) })
      }
    }
  })

  it('exits 1 with the reason when the relay cannot be reached', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const out = await inProcess(() => runMesh(['status', '--url', `http://127.0.0.1:${port}/`], ENV))
    expect(out).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(new RegExp(`^apiary mesh: cannot reach http://127.0.0.1:${port}/: .*ECONNREFUSED`)),
    })
  })

  it.each([
    ['a missing --url', ['status']],
    ['a ws:// url', ['status', '--url', 'ws://127.0.0.1:7777']],
    ['a missing command', ['--url', 'http://127.0.0.1:7777/']],
    ['an unknown command', ['peers', '--url', 'http://127.0.0.1:7777/']],
    ['an extra argument', ['status', 'now', '--url', 'http://127.0.0.1:7777/']],
    ['an unknown flag', ['status', '--url', 'http://127.0.0.1:7777/', '--yaml']],
  ])('exits 2 with the usage on stderr for %s', async (_what, argv) => {
    const out = await inProcess(() => runMesh(argv, ENV))
    expect(out).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/^apiary mesh: .*\nusage: apiary mesh status --url/) })
  })

  it('prints its usage for --help and exits 0', async () => {
    const out = await inProcess(() => runMesh(['--help'], ENV))
    expect(out).toMatchObject({
      code: 0,
      stderr: '',
      stdout: expect.stringMatching(/^usage: apiary mesh status --url <http\(s\):\/\/host\[:port\]\/> \[--key <secret hex>\] \[--json\]\n/),
    })
  })

  it('is a command of the apiary bin, listed in its usage', { timeout: 60_000 }, async () => {
    serving(200, BODY)
    expect(await apiary(['mesh', 'status', '--url', url, '--key', OPERATOR_SECRET])).toEqual({ code: 0, stdout: TABLE, stderr: '' })
    expect(await apiary(['mesh', 'status'])).toMatchObject({
      code: 2,
      stdout: '',
      stderr: expect.stringMatching(/^apiary mesh: --url must be/),
    })
    expect((await apiary(['--help'])).stdout).toContain(
      '  apiary mesh status --url <http(s)://host[:port]/> [--key <secret hex>] [--json]     (apiary mesh --help)\n',
    )
  })
})

async function inProcess(run: () => Promise<number>): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = []
  const err: string[] = []
  const spyOut = vi.spyOn(process.stdout, 'write').mockImplementation((s) => out.push(String(s)) > 0)
  const spyErr = vi.spyOn(process.stderr, 'write').mockImplementation((s) => err.push(String(s)) > 0)
  try {
    return { code: await run(), stdout: out.join(''), stderr: err.join('') }
  } finally {
    spyOut.mockRestore()
    spyErr.mockRestore()
  }
}
