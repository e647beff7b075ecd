// The console page in headless Chromium against a stand-in of the relay's console routes with fixed documents:
// every view renders, filters and pages reopen the stream, moderation asks first and sends the CSRF header,
// an admin sees their community only, and nothing breaks the strict CSP.

import { finalizeEvent } from 'nostr-tools/pure'
import type { Browser } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, openPage, screenshot, type WatchedPage } from '../support/browser'
import { consoleLoginLink } from '../support/console-login'
import { type ConsoleStub, startConsoleStub } from '../support/console-stub'
import { type ConsoleWorld, makeConsoleWorld } from '../support/console-world'
import { makeKeys } from '../support/events'
import { eventually } from '../support/eventually'

const operator = makeKeys()
const admin = makeKeys()
const stranger = makeKeys()

let browser: Browser
let stub: ConsoleStub
let world: ConsoleWorld

beforeAll(async () => {
  world = makeConsoleWorld({ operators: [operator.pubkey], admins: [[admin.pubkey, ['beta']]], agentCount: 10_000 })
  world.mesh = [
    {
      node: 'node-a',
      runtime: 'rt-a',
      peers: [{ runtime: 'rt-b', endpoint: '127.0.0.1:7001', phi: 0.4, suspect: false, connected: true }],
      sessions: [{ community: 'alpha', session: 'a'.repeat(64), owner: 'rt-a', generation: 3, leaseRemainingMs: 8000, local: true }],
      fenceRefusals: 0,
      leasesLost: 1,
    },
  ]
  ;[stub, browser] = await Promise.all([startConsoleStub(world), launchChromium()])
})

afterAll(async () => {
  await browser?.close()
  await stub?.close()
})

const pages: WatchedPage[] = []
afterEach(async () => {
  await Promise.all(pages.splice(0).map((p) => p.close()))
})

async function watchedPage() {
  const watched = await openPage(browser)
  pages.push(watched)
  return watched
}

async function signedIn(keys: { secretKey: Uint8Array }) {
  const watched = await watchedPage()
  await watched.page.goto(consoleLoginLink(stub.url, keys.secretKey))
  return watched
}

describe('the console page', () => {
  it('signs in with a one-time link, clears it from the address bar and shows every node on the overview', async () => {
    const { page, problems } = await signedIn(operator)
    await page.getByTestId('view-overview').waitFor()
    expect(new URL(page.url()).hash).toBe('')
    await expect(page.getByTestId('node-card').count()).resolves.toBe(3)
    await page.getByTestId('stream-status').filter({ hasText: 'live' }).waitFor()
    await expect(page.locator('[data-node="node-b"]').textContent()).resolves.toContain('redis unreachable')
    await expect(page.locator('[data-node="node-c"]').textContent()).resolves.toContain('gone')
    await expect(page.locator('[data-node="node-a"] .uplot').count()).resolves.toBe(5)
    await screenshot(page, 'overview')
    expect(problems).toEqual([])
  })

  it("signs in through a NIP-07 extension that signs the relay's challenge", async () => {
    const { page, problems } = await watchedPage()
    await page.exposeFunction('signAsOperator', (template: Parameters<typeof finalizeEvent>[0]) =>
      finalizeEvent(template, operator.secretKey),
    )
    await page.addInitScript((pubkey) => {
      const signer = globalThis as unknown as { signAsOperator(t: unknown): Promise<unknown>; nostr: unknown }
      signer.nostr = { getPublicKey: async () => pubkey, signEvent: (t: unknown) => signer.signAsOperator(t) }
    }, operator.pubkey)
    await page.goto(`${stub.url}/console`)
    await page.getByRole('button', { name: 'Sign in with extension' }).click()
    await page.getByTestId('view-overview').waitFor()
    await expect(page.getByTestId('who').textContent()).resolves.toContain('operator')
    expect(problems).toEqual([])
  })

  it('lists one page of 10,000 agents, pages and filters through the stream, and highlights a flagged agent', async () => {
    const { page, problems } = await signedIn(operator)
    await page.getByTestId('tab-agents').click()
    await page.getByTestId('agent-range').filter({ hasText: '1–100 of 10000' }).waitFor()
    await expect(page.getByTestId('agent-row').count()).resolves.toBe(100)
    await expect(page.locator('tr.flagged').getAttribute('data-pubkey')).resolves.toBe(world.agents[0]!.pubkey)
    await screenshot(page, 'agents')

    await page.getByRole('button', { name: 'next' }).click()
    await page.getByTestId('agent-range').filter({ hasText: '101–200 of 10000' }).waitFor()
    // the page asks the server for that page: the range shows the query at once, its stream opens a moment
    // later (an EventSource may also have reconnected since, with its own query)
    await eventually(
      () => stub.streams.some((q) => q.get('offset') === '100'),
      (asked) => asked,
      'the stream of the second page opened',
    )

    await page.getByTestId('agent-state-filter').selectOption('ZOMBIE')
    await page.getByTestId('agent-range').filter({ hasText: '1–100 of 2000' }).waitFor()
    const states = await page.getByTestId('agent-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-state')))
    expect(new Set(states)).toEqual(new Set(['ZOMBIE']))
    expect(stub.streams.some((q) => q.get('state') === 'ZOMBIE')).toBe(true)
    expect(problems).toEqual([])
  })

  it('shows communities, hot connections by the ranking chosen, and the mesh; the tabs follow the arrow keys', async () => {
    const { page, problems } = await signedIn(operator)
    await page.getByTestId('tab-overview').focus()
    await page.keyboard.press('ArrowRight')
    await page.getByTestId('view-communities').waitFor()
    await expect(page.getByTestId('tab-communities').evaluate((tab) => tab === tab.ownerDocument.activeElement)).resolves.toBe(true)
    await expect(
      page.getByTestId('community-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-community'))),
    ).resolves.toEqual(['alpha', 'beta'])
    await screenshot(page, 'communities')
    await page.getByTestId('tab-hot').click()
    await page.getByTestId('hot-row').nth(19).waitFor()
    await page.getByTestId('hot-ranking').selectOption('outBytesPerSecond')
    await expect.poll(() => stub.streams.at(-1)?.get('ranking')).toBe('outBytesPerSecond')
    await screenshot(page, 'hot')
    await page.getByTestId('tab-mesh').click()
    await expect(page.getByTestId('mesh-node').textContent()).resolves.toContain('leases lost 1')
    await screenshot(page, 'mesh')
    expect(problems).toEqual([])
  })

  it('shows a supervision event within 2 s of the relay having it, newest first, filterable by type and path', async () => {
    const { page, problems } = await signedIn(operator)
    await page.getByTestId('tab-supervision').click()
    await page.getByTestId('stream-status').filter({ hasText: 'live' }).waitFor()
    const row = (seq: number, type: 'crashed' | 'restarted') => ({
      node: 'node-a',
      seq,
      atMs: Date.now(),
      type,
      path: `/communities/alpha/channel-${seq}`,
      supervisor: '/communities',
      detail: 'Error: boom',
    })
    world.supervision.push(row(1, 'crashed'), row(2, 'restarted'))
    await page.getByTestId('supervision-row').nth(1).waitFor({ timeout: 2000 })
    await expect(page.getByTestId('supervision-row').first().getAttribute('data-type')).resolves.toBe('restarted')
    await page.getByTestId('supervision-type-filter').selectOption('crashed')
    await expect(page.getByTestId('supervision-row').count()).resolves.toBe(1)
    await page.getByTestId('supervision-type-filter').selectOption('')
    await page.getByTestId('supervision-path-filter').fill('channel-2')
    await expect(page.getByTestId('supervision-row').getAttribute('data-type')).resolves.toBe('restarted')
    await page.getByTestId('supervision-path-filter').fill('')
    await screenshot(page, 'supervision')

    for (let seq = 3; seq <= 1_200; seq++) world.supervision.push(row(seq, 'restarted'))
    await page.locator('caption', { hasText: '(1000 of 1000)' }).waitFor()
    await expect(page.getByTestId('supervision-row').first().textContent()).resolves.toContain('channel-1200')
    expect(problems).toEqual([])
  })

  it('goes back to sign-in, saying why, when the session ends', async () => {
    const expiring = makeKeys()
    world.operators.add(expiring.pubkey)
    const { page } = await signedIn(expiring)
    await page.getByTestId('stream-status').filter({ hasText: 'live' }).waitFor()
    stub.expire(expiring.pubkey)
    await expect(page.getByTestId('sign-in-error').textContent()).resolves.toMatch(/^auth-required: /)
  })

  it('bans a pubkey only after confirming the exact call, with the CSRF header, and shows the NIP-86 result', async () => {
    const { page, problems } = await signedIn(operator)
    await page.getByTestId('tab-moderation').click()
    const form = page.getByTestId('form-banpubkey')
    await form.getByLabel('pubkey (hex)').fill(stranger.pubkey)
    await form.getByLabel('reason (optional)').fill('spam')
    await form.getByRole('button', { name: 'Ban a pubkey' }).click()
    await expect(page.getByTestId('confirm-text').textContent()).resolves.toBe(`banpubkey("${stranger.pubkey}", "spam") in alpha`)
    await screenshot(page, 'moderation')
    await page.getByRole('button', { name: 'Cancel' }).click()
    expect(stub.calls).toEqual([])

    await form.getByRole('button', { name: 'Ban a pubkey' }).click()
    await page.getByTestId('confirm-yes').click()
    await page.getByTestId('moderation-result').filter({ hasText: 'result true' }).waitFor()
    expect(stub.calls).toEqual([{ by: operator.pubkey, community: 'alpha', method: 'banpubkey', params: [stranger.pubkey, 'spam'] }])
    expect(problems).toEqual([])
  })

  it("shows a community's admin their community only, and no archiving", async () => {
    const { page } = await signedIn(admin)
    await page.getByTestId('who').filter({ hasText: 'admin' }).waitFor()
    await page.getByTestId('tab-communities').click()
    await expect(
      page.getByTestId('community-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-community'))),
    ).resolves.toEqual(['beta'])
    await page.getByTestId('tab-agents').click()
    await page.getByTestId('agent-range').filter({ hasText: 'of 5000' }).waitFor()
    await expect(page.getByTestId('tab-mesh').count()).resolves.toBe(0)
    await page.getByTestId('tab-moderation').click()
    await page.getByTestId('form-banpubkey').waitFor()
    await expect(page.getByTestId('form-archivecommunity').count()).resolves.toBe(0)
    await expect(page.locator('#banpubkey-community option').allTextContents()).resolves.toEqual(['beta'])
  })

  it('refuses someone who is neither operator nor admin, and a link used twice, showing the reason with its prefix', async () => {
    const { page } = await signedIn(stranger)
    await expect(page.getByTestId('sign-in-error').textContent()).resolves.toMatch(/^restricted: /)
    const link = consoleLoginLink(stub.url, operator.secretKey)
    await page.goto(link)
    await page.getByTestId('view-overview').waitFor()
    const again = await watchedPage()
    await again.page.goto(link)
    await expect(again.page.getByTestId('sign-in-error').textContent()).resolves.toMatch(/^invalid: /)
    await screenshot(again.page, 'sign-in')
  })
})
