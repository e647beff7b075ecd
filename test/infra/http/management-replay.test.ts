import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createMemoryReplayGuard } from '../../../src/infra/gates/memory-replay-guard'
import { createClientAddressing } from '../../../src/infra/http/client-ip'
import { createManagement } from '../../../src/infra/http/nip86/endpoint'
import type { ManagementOps } from '../../../src/infra/http/nip86/methods'
import { Tenants } from '../../../src/infra/http/tenants'
import { createLogger } from '../../../src/infra/log'
import { type CommunityRecord, DEFAULT_SETTINGS } from '../../../src/infra/store/community-store'
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
const T0 = 1_800_000_000

/**
 * Two nodes' management endpoints over real HTTP servers, sharing one replay guard as a cluster shares Redis,
 * each on a clock the test steps (seconds; the guard's clock is the true one, `clock.t`).
 */
describe('a NIP-98 token is good for one management call', () => {
  const servers: Server[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))))
  })
  const clock = { t: T0 }
  const guard = createMemoryReplayGuard({ now: () => clock.t * 1000 })

  async function node(skewSeconds: number): Promise<TestRelay> {
    const ops = { isOperator: (p: string) => p === operator.pubkey, supportedMethods: () => [] } as unknown as ManagementOps
    const manage = createManagement({
      ...ops,
      tenants: new Tenants([RECORD]),
      addressing: createClientAddressing({ trustedProxies: [], trustForwardedProto: false, ipv6PrefixLength: 64 }),
      verifier: { verify: async () => 'ok', threads: 1, close: async () => {} },
      replayGuard: guard,
      isIpBlocked: async () => false,
      admitApi: async () => ({ allowed: true }),
      admitApiIp: async () => ({ allowed: true }),
      metrics: { signatureChecks: { inc: () => {} }, admissionRejections: { inc: () => {} } },
      nowSeconds: () => clock.t + skewSeconds,
      log: createLogger('silent'),
    })
    const server = createServer((req, res) => void manage(req, res))
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return { port: (server.address() as AddressInfo).port } as TestRelay
  }

  it('refuses a token dated 60 s ahead at every second a node still accepts its created_at, one whose clock lags by 60 s included', async () => {
    const [onTime, lagging] = [await node(0), await node(-60)]
    // behind a load balancer both nodes answer one URL, so one token is good on either (Host: its port)
    const publicPort = onTime.port
    const body = rpc('supportedmethods')
    clock.t = T0
    const header = nip98Header(operator, `http://127.0.0.1:${publicPort}/`, body, { created_at: T0 + 60 })
    const call = (r: TestRelay) => postNip86(r, body, header, '127.0.0.1', publicPort)
    expect((await call(onTime)).status).toBe(200)
    // replayed, as an eavesdropper would, every second until both nodes' windows have closed
    const accepted: string[] = []
    for (let s = 1; s <= 200; s++) {
      clock.t = T0 + s
      for (const [name, r] of [
        ['on time', onTime],
        ['lagging', lagging],
      ] as const) {
        const answer = await call(r)
        if (answer.status === 200) accepted.push(`${name} +${s}s`)
        else expect(answer.json.error).toMatch(/^invalid: /)
      }
    }
    expect(accepted).toEqual([])
  })
})
