import { bytesToHex } from '@noble/hashes/utils.js'
import { afterEach, describe, expect, it } from 'vitest'
import { operatorGetAuthorization } from '../../../src/client/admin-client'
import { type ConsoleServer, jsonOf, newSigner, signedIn, startConsoleServer } from '../../support/console-server'
import { createFakeConsoleSource, type FakeConsoleSource } from '../../support/console-source'

const operator = newSigner()
const admin = newSigner()
const target = 'b'.repeat(64)
let server: ConsoleServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

async function start(): Promise<{ s: ConsoleServer; source: FakeConsoleSource }> {
  const source = createFakeConsoleSource({ 'rt-alpha': [admin.pubkey], 'rt-beta': [] }, [operator.pubkey])
  server = await startConsoleServer(source)
  return { s: server, source }
}

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

function expectConsoleHeaders(res: Response) {
  expect(res.headers.get('content-security-policy')).toBe(CSP)
  expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  expect(res.headers.get('referrer-policy')).toBe('no-referrer')
}

describe('the console page and its files', () => {
  it('serves the page at /console and /console/, its files and the vendored libraries, each with the CSP', async () => {
    const { s } = await start()
    for (const path of ['/console', '/console/']) {
      const page = await fetch(`${s.origin}${path}`)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toMatch(/^text\/html/)
      expect(await page.text()).toContain('/console/assets/app.js')
      expectConsoleHeaders(page)
    }
    for (const name of ['app.js', 'style.css', 'vendor/preact.mjs', 'vendor/htm.mjs', 'vendor/uPlot.esm.js', 'vendor/uPlot.min.css']) {
      const res = await fetch(`${s.origin}/console/assets/${name}`)
      expect(res.status, name).toBe(200)
      expectConsoleHeaders(res)
    }
    const hooks = await (await fetch(`${s.origin}/console/assets/vendor/hooks.mjs`)).text()
    expect(hooks).toContain('from"./preact.mjs"')
    expect(hooks).not.toMatch(/from\s*["']preact["']/)
  })

  it('serves the page but answers 503 "error: console unavailable" from the API while the node has no source', async () => {
    server = await startConsoleServer(undefined)
    expect((await fetch(`${server.origin}/console/`)).status).toBe(200)
    const me = await fetch(`${server.origin}/console/api/me`)
    expect(me.status).toBe(503)
    expect(await jsonOf(me)).toEqual({ error: 'error: console unavailable' })
  })

  it('answers 404 for a file outside the allow-list, a path that climbs out, and the page by another name', async () => {
    const { s } = await start()
    for (const path of [
      '/console/assets/console-routes.ts',
      '/console/assets/../sessions.ts',
      '/console/assets/%2e%2e/sessions.ts',
      '/console/assets/index.html',
    ]) {
      const res = await fetch(`${s.origin}${path}`)
      expect(res.status, path).toBe(404)
    }
  })
})

describe('moderation from the console', () => {
  it('bans a pubkey for the signed-in identity with the CSRF header; the ban list shows it, and the call is logged', async () => {
    const { s, source } = await start()
    const { cookie, identity } = await signedIn(s.origin, admin)
    const call = (method: string, params: unknown[]) =>
      fetch(`${s.origin}/console/api/moderate`, {
        method: 'POST',
        headers: { cookie, 'X-Apiary-CSRF': identity.csrf, 'Content-Type': 'application/json' },
        body: JSON.stringify({ community: 'rt-alpha', method, params }),
      })
    const ban = await call('banpubkey', [target, 'spam'])
    expect(ban.status).toBe(200)
    expect(await jsonOf(ban)).toEqual({ result: true })
    expect(source.calls[0]).toMatchObject({ community: 'rt-alpha', pubkey: admin.pubkey, request: { method: 'banpubkey' } })
    const list = await jsonOf(await call('listbannedpubkeys', []))
    expect(list.result.map((b: { pubkey: string }) => b.pubkey)).toEqual([target])
    expect(s.logs.find((l) => l.msg === 'console: moderation')).toMatchObject({
      by: admin.pubkey,
      community: 'rt-alpha',
      method: 'banpubkey',
      params: [target, 'spam'],
    })
  })

  it('refuses without the CSRF header, outside the scope, an operator method for an admin and a method the console does not offer', async () => {
    const { s, source } = await start()
    const { cookie, identity } = await signedIn(s.origin, admin)
    const call = (body: unknown, csrf = identity.csrf) =>
      fetch(`${s.origin}/console/api/moderate`, { method: 'POST', headers: { cookie, 'X-Apiary-CSRF': csrf }, body: JSON.stringify(body) })
    const noCsrf = await call({ community: 'rt-alpha', method: 'banpubkey', params: [target] }, '')
    expect(noCsrf.status).toBe(403)
    const elsewhere = await call({ community: 'rt-beta', method: 'banpubkey', params: [target] })
    expect(elsewhere.status).toBe(403)
    expect((await jsonOf(elsewhere)).error).toMatch(/^restricted:/)
    const archive = await call({ community: 'rt-alpha', method: 'archivecommunity', params: ['rt-alpha'] })
    expect(archive.status).toBe(403)
    const other = await call({ community: 'rt-alpha', method: 'setagenttier', params: [target, 'platform'] })
    expect(other.status).toBe(400)
    expect((await jsonOf(other)).error).toMatch(/^invalid:/)
    const crossSite = await fetch(`${s.origin}/console/api/moderate`, {
      method: 'POST',
      headers: { cookie, 'X-Apiary-CSRF': identity.csrf, Origin: 'https://evil.example' },
      body: JSON.stringify({ community: 'rt-alpha', method: 'banpubkey', params: [target] }),
    })
    expect(crossSite.status).toBe(403)
    expect(source.calls).toEqual([])
  })
})

describe('the console JSON endpoints for scripts', () => {
  it("answers /api/hot, /api/agents and /api/nodes to an operator's NIP-98 as to a session, and 401 without either", async () => {
    const { s } = await start()
    const sk = bytesToHex(operator.secretKey)
    const get = (path: string, headers: Record<string, string>) => fetch(`${s.origin}${path}`, { headers })
    const hot = await get('/console/api/hot?ranking=inBytesPerSecond', {
      Authorization: operatorGetAuthorization(sk, `${s.origin}/console/api/hot?ranking=inBytesPerSecond`),
    })
    expect(hot.status).toBe(200)
    const body = await jsonOf(hot)
    expect(body.node).toBe('n1')
    expect(new Set(body.rows.map((r: { community: string }) => r.community))).toEqual(new Set(['rt-alpha', 'rt-beta']))
    const agents = await get('/console/api/agents?state=ACTIVE', {
      Authorization: operatorGetAuthorization(sk, `${s.origin}/console/api/agents?state=ACTIVE`),
    })
    expect((await jsonOf(agents)).total).toBe(2)
    const { cookie } = await signedIn(s.origin, admin)
    const nodes = await jsonOf(await get('/console/api/nodes', { cookie }))
    expect(nodes.nodes[0].status.communities.map((c: { id: string }) => c.id)).toEqual(['rt-alpha'])
    expect((await get('/console/api/hot', {})).status).toBe(401)
    const stranger = await get('/console/api/hot', {
      Authorization: operatorGetAuthorization(bytesToHex(newSigner().secretKey), `${s.origin}/console/api/hot`),
    })
    expect(stranger.status).toBe(403)
  })
})
