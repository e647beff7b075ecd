// The console in headless Chromium against real relays: sign-in by one-time link, agents seen by the relay
// as their processes are frozen and killed, a crash in the supervision view, a ban from the console closing
// a socket on another node, an admin's scope. Screenshots go to test-artifacts/console/relay-<view>.png.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { ConfigInput } from '../../src/infra/config'
import { type AgentProcess, endAgentProcess, startAgentProcess } from '../support/agent-process'
import { launchChromium, openPage, screenshot } from '../support/browser'
import { consoleLoginLink } from '../support/console-login'
import { makeKeys, type TestKeys } from '../support/events'
import { openFailingSqliteStore } from '../support/failing-event-store'
import { startTestRelay, type TestRelay } from '../support/relay'
import { auth, client, publishNew, relayUrlOf } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'

const httpUrlOf = (r: TestRelay) => `http://127.0.0.1:${r.port}`

/** Whether this tree's relay serves the console (its routes and its node source wired): 401 to an anonymous /me. */
async function consoleServed(): Promise<boolean> {
  const r = await startTestRelay()
  try {
    return (await fetch(`${httpUrlOf(r)}/console/api/me`)).status === 401
  } finally {
    await r.close()
  }
}
const served = await consoleServed()

const operator = makeKeys()
let browser: Browser
beforeAll(async () => {
  if (served) browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
})

async function signIn(r: TestRelay, keys: TestKeys): Promise<{ page: Page; problems: string[] }> {
  const watched = await openPage(browser)
  await watched.page.goto(consoleLoginLink(httpUrlOf(r), keys.secretKey))
  return watched
}

const agentRow = (page: Page, pubkey: string, state?: string) =>
  page.locator(`[data-testid="agent-row"][data-pubkey="${pubkey}"]${state ? `[data-state="${state}"]` : ''}`)

describe.skipIf(!served)('the console against a relay', () => {
  const relays = useRelays()
  const agents: AgentProcess[] = []
  afterEach(async () => {
    await Promise.all(agents.splice(0).map(endAgentProcess))
  })

  it('signs in with the one-time link and shows the node on the overview', async () => {
    const r = await relays.start({ operatorPubkeys: [operator.pubkey] })
    const { page, problems } = await signIn(r, operator)
    await page.getByTestId('node-card').first().waitFor()
    await expect(page.getByTestId('node-card').count()).resolves.toBe(1)
    await expect(page.getByTestId('node-card').textContent()).resolves.toContain('ready')
    await page.getByTestId('stream-status').filter({ hasText: 'live' }).waitFor()
    await screenshot(page, 'relay-overview')
    expect(problems).toEqual([])
  })

  it('shows an agent ACTIVE, SUSPECT and ZOMBIE as its process is stopped, and drops it when killed or gone', async () => {
    // heartbeats every 2 s: SUSPECT from 3 s of silence, ZOMBIE past the 6 s lease (three heartbeats), so each
    // state lasts several of the page's 1 s snapshots. The session timeout keeps a ZOMBIE listed until it is killed.
    const short = { presenceHeartbeatSeconds: 2, agentSessionTimeoutSeconds: 30, agentOrphanScanSeconds: 0.1 } as ConfigInput
    const r = await relays.start({ ...short, operatorPubkeys: [operator.pubkey] })
    const options = { heartbeatSeconds: 2, leaseSeconds: 6, capability: 'translate' }
    const [killed, leaving] = await Promise.all([startAgentProcess(r.url, options), startAgentProcess(r.url, options)])
    agents.push(killed!, leaving!)
    const { page } = await signIn(r, operator)
    await page.getByTestId('tab-agents').click()
    await agentRow(page, killed!.pubkey, 'ACTIVE').waitFor()
    await agentRow(page, leaving!.pubkey, 'ACTIVE').waitFor()

    killed!.signal('SIGSTOP')
    await agentRow(page, killed!.pubkey, 'SUSPECT').waitFor({ timeout: 8_000 })
    await agentRow(page, killed!.pubkey, 'ZOMBIE').waitFor({ timeout: 8_000 })
    await screenshot(page, 'relay-agents')
    killed!.signal('SIGKILL')
    await agentRow(page, killed!.pubkey).waitFor({ state: 'detached', timeout: 5_000 })

    leaving!.signal('SIGSTOP')
    await agentRow(page, leaving!.pubkey, 'SUSPECT').waitFor({ timeout: 8_000 })
    leaving!.signal('SIGCONT')
    leaving!.signal('SIGTERM')
    await agentRow(page, leaving!.pubkey).waitFor({ state: 'detached', timeout: 5_000 })
    expect((await leaving!.exited).code).toBe(0)
  }, 60_000)

  it('shows a crash injected in a community in the supervision view within 2 s', async () => {
    const failing = openFailingSqliteStore(join(mkdtempSync(join(tmpdir(), 'apiary-console-crash-')), 'events.sqlite'))
    const r = await relays.start({ operatorPubkeys: [operator.pubkey] }, undefined, { eventStore: failing.store })
    const { page } = await signIn(r, operator)
    await page.getByTestId('tab-supervision').click()
    await page.getByTestId('stream-status').filter({ hasText: 'live' }).waitFor()

    failing.failNext('query', 1)
    const c = await client(r)
    c.send(['REQ', 'crash', { kinds: [1] }])
    const sentMs = Date.now()
    await page.locator('[data-testid="supervision-row"][data-type="crashed"]').first().waitFor({ timeout: 2_000 })
    expect(Date.now() - sentMs).toBeLessThan(2_000)
    await expect(page.locator('[data-testid="supervision-row"][data-type="crashed"]').first().textContent()).resolves.toContain(
      'community/default',
    )
    await screenshot(page, 'relay-supervision')
    c.close()
  })

  it('ranks a publishing connection first among the hot connections, and says the mesh is off', async () => {
    const r = await relays.start({ operatorPubkeys: [operator.pubkey] })
    const busy = makeKeys()
    const c = await client(r)
    expect((await auth(c, busy, relayUrlOf(r))).accepted).toBe(true)
    const { page } = await signIn(r, operator)
    await page.getByTestId('tab-hot').click()
    for (let i = 0; i < 30; i++) await publishNew(c, busy, { kind: 1, content: `busy ${i}` })
    await page.getByTestId('hot-row').first().locator(`code[title="${busy.pubkey}"]`).waitFor({ timeout: 5_000 })
    await screenshot(page, 'relay-hot')
    await page.getByTestId('tab-mesh').click()
    await page.getByTestId('mesh-off').waitFor()
    c.close()
  })

  it("shows a community's admin their community only, and refuses anyone else", async () => {
    const admin = makeKeys()
    const r = await relays.start({
      operatorPubkeys: [operator.pubkey],
      communities: [
        { id: 'alpha', hosts: ['alpha.test'], admins: [admin.pubkey] },
        { id: 'beta', hosts: ['beta.test'] },
      ],
    })
    const { page } = await signIn(r, admin)
    await page.getByTestId('who').filter({ hasText: 'admin' }).waitFor()
    await page.getByTestId('tab-communities').click()
    await page.locator('[data-testid="community-row"][data-community="alpha"]').waitFor()
    await expect(
      page.getByTestId('community-row').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-community'))),
    ).resolves.toEqual(['alpha'])
    await page.getByTestId('tab-moderation').click()
    await expect(page.locator('#banpubkey-community option').allTextContents()).resolves.toEqual(['alpha'])
    await expect(page.getByTestId('form-archivecommunity').count()).resolves.toBe(0)

    const stranger = await signIn(r, makeKeys())
    await expect(stranger.page.getByTestId('sign-in-error').textContent()).resolves.toMatch(/^restricted: /)
  })
})

describe.skipIf(!served)('the console on a cluster', () => {
  const relays = useRelays()
  const cluster = useCluster(relays)

  it('shows the three nodes of a cluster on any node, and marks one gone once it stops publishing', async () => {
    const { nodes } = await cluster.nodes(3, { operatorPubkeys: [operator.pubkey] })
    const { page } = await signIn(nodes[1]!, operator)
    await page.getByTestId('node-card').nth(2).waitFor()
    await expect(page.getByTestId('node-card').count()).resolves.toBe(3)
    const stopped = nodes[2]!
    relays.forget(stopped)
    await stopped.close()
    // a node is gone once it missed three publications (2 s apart)
    await page.locator('[data-testid="node-card"].is-gone').waitFor({ timeout: 10_000 })
    await expect(page.locator('[data-testid="node-card"].is-gone').count()).resolves.toBe(1)
    await screenshot(page, 'relay-cluster-overview')
  }, 40_000)

  it("closes the banned pubkey's socket on another node when banned from the console", async () => {
    const {
      id,
      host,
      nodes: [a, b],
    } = await cluster.nodes(2, { operatorPubkeys: [operator.pubkey] })
    const banned = makeKeys()
    const onB = await client(b!, host)
    expect((await auth(onB, banned, relayUrlOf(b!, host))).accepted).toBe(true)

    const { page } = await signIn(a!, operator)
    await page.getByTestId('tab-moderation').click()
    const form = page.getByTestId('form-banpubkey')
    await form.locator('select').selectOption(id)
    await form.getByLabel('pubkey (hex)').fill(banned.pubkey)
    await form.getByRole('button', { name: 'Ban a pubkey' }).click()
    await page.getByTestId('confirm-yes').click()
    await page.getByTestId('moderation-result').filter({ hasText: 'result true' }).waitFor()
    await expect(onB.closed).resolves.toMatchObject({ code: expect.any(Number) })
  })
})
