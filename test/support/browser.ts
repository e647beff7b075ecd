// Headless Chromium from Debian's package (.ci/run installs it), driven by playwright-core: the console's page
// proven in a real browser. Each page records what went wrong in it (a console error, a CSP refusal, an
// exception), so a test can assert the page ran clean.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'

export const CHROMIUM_PATH = '/usr/bin/chromium'
export const SCREENSHOT_DIR = 'test-artifacts/console'

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-component-update', '--disable-sync'],
  })
}

export interface WatchedPage {
  page: Page
  /** console errors and uncaught exceptions seen so far */
  problems: string[]
  close(): Promise<void>
}

export async function openPage(browser: Browser): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    // the page asks /console/api/me whether a session is open; a 401 there is an answer, not a fault
    if (m.type() === 'error' && !m.text().includes('status of 401')) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(String(e)))
  return { page, problems, close: () => context.close() }
}

export async function screenshot(page: Page, view: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  const path = join(SCREENSHOT_DIR, `${view}.png`)
  await page.screenshot({ path, fullPage: true })
  return path
}
