import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { apiary } from '../support/cli'
import { jsonOf, startConsoleServer } from '../support/console-server'
import { createFakeConsoleSource } from '../support/console-source'
import { httpGet } from '../support/http'
import { startTestRelay } from '../support/relay'

describe('the console on a running relay', () => {
  it('serves the page and its files on any Host, with the CSP, and nothing under /console when it is turned off', async () => {
    const on = await startTestRelay()
    const off = await startTestRelay({ console: { enabled: 'false' } })
    try {
      const page = await httpGet(on, '/console/', { host: 'unknown.example' })
      expect(page.status).toBe(200)
      expect(page.headers['content-security-policy']).toContain("script-src 'self'")
      expect(page.body).toContain('/console/assets/app.js')
      const preact = await httpGet(on, '/console/assets/vendor/preact.mjs', { host: `127.0.0.1:${on.port}` })
      expect(preact.status).toBe(200)
      expect(preact.headers['content-type']).toMatch(/^text\/javascript/)
      expect((await httpGet(off, '/console/', { host: `127.0.0.1:${off.port}` })).status).toBe(404)
      expect((await httpGet(off, '/console/api/me', { host: `127.0.0.1:${off.port}` })).status).toBe(404)
    } finally {
      await on.close()
      await off.close()
    }
  })
})

describe('apiary console login', () => {
  const empty = mkdtempSync(join(tmpdir(), 'apiary-console-'))
  afterAll(() => rmSync(empty, { recursive: true, force: true }))

  it("prints a one-time link signed with the data dir's relay key that signs its opener in as an operator", async () => {
    const relay = await startTestRelay()
    const source = createFakeConsoleSource({ 'e2e-console': [] }, [relay.relay.pubkey])
    const server = await startConsoleServer(source)
    try {
      const run = await apiary(['console', 'login', '--url', server.origin, '--data-dir', relay.dataDir])
      expect(run.code).toBe(0)
      const [link, note] = run.stdout.trim().split('\n')
      expect(link).toMatch(new RegExp(`^${server.origin}/console/#login=[A-Za-z0-9_-]+$`))
      expect(note).toBe('valid for 60 s, once')
      const token = link?.split('#login=')[1]
      const post = () => fetch(`${server.origin}/console/api/session`, { method: 'POST', body: JSON.stringify({ token }) })
      const res = await post()
      expect(res.status).toBe(200)
      expect(await jsonOf(res)).toMatchObject({ pubkey: relay.relay.pubkey, role: 'operator' })
      expect((await post()).status).toBe(401)
    } finally {
      await server.close()
      await relay.close()
    }
  })

  it('exits 1 when the data dir has no relay key (it never makes one), and 2 for a URL with a path', async () => {
    const noKey = await apiary(['console', 'login', '--url', 'http://127.0.0.1:7777', '--data-dir', empty])
    expect(noKey.code).toBe(1)
    expect(noKey.stderr).toMatch(/no relay key/)
    const withPath = await apiary(['console', 'login', '--url', 'http://127.0.0.1:7777/relay', '--data-dir', empty])
    expect(withPath.code).toBe(2)
    expect(withPath.stderr).toMatch(/usage: apiary console login/)
  })
})
