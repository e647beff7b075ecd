import { bytesToHex } from '@noble/hashes/utils.js'
import { afterEach, describe, expect, it } from 'vitest'
import { consoleLoginLink } from '../../../src/client/console-login'
import { toSigningKey } from '../../../src/protocols/nip01/sign'
import {
  type ConsoleServer,
  cookieFrom,
  jsonOf,
  newSigner,
  type Signer,
  signedIn,
  signInWithExtension,
  signSessionEvent,
  startConsoleServer,
} from '../../support/console-server'
import { createFakeConsoleSource } from '../../support/console-source'

const operator = newSigner()
const admin = newSigner()
let server: ConsoleServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

async function start(opts: Parameters<typeof startConsoleServer>[1] = {}) {
  const source = createFakeConsoleSource({ 'si-alpha': [admin.pubkey], 'si-beta': [] }, [operator.pubkey])
  server = await startConsoleServer(source, opts)
  return server
}

const linkToken = (origin: string, who: Signer) =>
  consoleLoginLink(origin, toSigningKey(who.secretKey), Math.floor(Date.now() / 1000)).split('#login=')[1] ?? ''
const postSession = (origin: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${origin}/console/api/session`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
const signInCount = async (s: ConsoleServer, outcome: string) =>
  (await s.metrics.consoleSignIns.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0

describe('signing in to the console', () => {
  it('signs an operator in with a NIP-07 signed challenge: an HttpOnly SameSite=Strict cookie and every community', async () => {
    const s = await start()
    const res = await signInWithExtension(s.origin, operator)
    expect(res.status).toBe(200)
    const cookie = res.headers.get('set-cookie') ?? ''
    expect(cookie).toMatch(/^apiary_console=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/console; Max-Age=1800$/)
    const identity = await jsonOf(res)
    expect(identity).toMatchObject({ pubkey: operator.pubkey, role: 'operator', communities: ['si-alpha', 'si-beta'] })
    const me = await fetch(`${s.origin}/console/api/me`, { headers: { cookie: cookieFrom(res) } })
    expect(me.status).toBe(200)
    expect(await jsonOf(me)).toEqual(identity)
    expect(await signInCount(s, 'ok')).toBe(1)
  })

  it('signs an operator in with a one-time link, and answers "invalid:" when the link is used again', async () => {
    const s = await start()
    const token = linkToken(s.origin, operator)
    const first = await postSession(s.origin, { token })
    expect(first.status).toBe(200)
    expect((await jsonOf(first)).role).toBe('operator')
    const again = await postSession(s.origin, { token })
    expect(again.status).toBe(401)
    expect((await jsonOf(again)).error).toMatch(/^invalid:/)
    expect(await signInCount(s, 'invalid')).toBe(1)
  })

  it('refuses someone who is neither an operator nor an admin with 403 "restricted:", and counts it', async () => {
    const s = await start()
    const res = await signInWithExtension(s.origin, newSigner())
    expect(res.status).toBe(403)
    expect((await jsonOf(res)).error).toMatch(/^restricted:/)
    expect(res.headers.get('set-cookie')).toBeNull()
    expect(await signInCount(s, 'restricted')).toBe(1)
    expect(s.logs.some((l) => l.msg === 'console: sign-in refused')).toBe(true)
  })

  it("gives a community's admin that community only", async () => {
    const s = await start()
    const { cookie } = await signedIn(s.origin, admin)
    const me = await jsonOf(await fetch(`${s.origin}/console/api/me`, { headers: { cookie } }))
    expect(me).toMatchObject({ pubkey: admin.pubkey, role: 'admin', communities: ['si-alpha'] })
  })

  it('answers 401 "auth-required:" to a call without a session cookie, or with an unknown one', async () => {
    const s = await start()
    const none = await fetch(`${s.origin}/console/api/me`)
    expect(none.status).toBe(401)
    expect((await jsonOf(none)).error).toMatch(/^auth-required:/)
    const forged = await fetch(`${s.origin}/console/api/me`, { headers: { cookie: `apiary_console=${'A'.repeat(43)}` } })
    expect(forged.status).toBe(401)
  })

  it('answers "invalid:" to a challenge used twice, a made-up challenge, a wrong URL and a stale event', async () => {
    const s = await start()
    const { challenge } = await jsonOf(await fetch(`${s.origin}/console/api/challenge`, { method: 'POST' }))
    expect((await postSession(s.origin, { event: signSessionEvent(s.origin, operator, challenge) })).status).toBe(200)
    const reused = await postSession(s.origin, {
      event: signSessionEvent(s.origin, operator, challenge, Math.floor(Date.now() / 1000) - 1),
    })
    const madeUp = await postSession(s.origin, { event: signSessionEvent(s.origin, operator, bytesToHex(new Uint8Array(32))) })
    const fresh = async () => (await jsonOf(await fetch(`${s.origin}/console/api/challenge`, { method: 'POST' }))).challenge as string
    const wrongUrl = await postSession(s.origin, { event: signSessionEvent('http://elsewhere.example', operator, await fresh()) })
    const stale = await postSession(s.origin, {
      event: signSessionEvent(s.origin, operator, await fresh(), Math.floor(Date.now() / 1000) - 120),
    })
    for (const res of [reused, madeUp, wrongUrl, stale]) {
      expect(res.status).toBe(401)
      expect((await jsonOf(res)).error).toMatch(/^invalid:/)
    }
    const garbage = await postSession(s.origin, { nothing: true })
    expect(garbage.status).toBe(400)
    expect((await jsonOf(garbage)).error).toMatch(/^invalid:/)
  })

  it('marks the cookie Secure when a trusted proxy says the page came over https, and checks the https URL', async () => {
    const s = await start({ trustForwardedProto: true })
    const proxied = { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'console.example' }
    const { challenge } = await jsonOf(await fetch(`${s.origin}/console/api/challenge`, { method: 'POST', headers: proxied }))
    const plainUrl = await postSession(s.origin, { event: signSessionEvent(s.origin, operator, challenge) }, proxied)
    expect(plainUrl.status).toBe(401)
    const again = await jsonOf(await fetch(`${s.origin}/console/api/challenge`, { method: 'POST', headers: proxied }))
    const res = await postSession(s.origin, { event: signSessionEvent('https://console.example', operator, again.challenge) }, proxied)
    expect(res.status).toBe(200)
    expect(res.headers.get('set-cookie')).toMatch(/; Secure$/)
  })

  it('answers 429 "rate-limited:" once the client IP spent its api budget', async () => {
    const s = await start({ apiBudget: 2 })
    const res = await signInWithExtension(s.origin, operator) // challenge + session: the whole budget
    expect(res.status).toBe(200)
    const over = await fetch(`${s.origin}/console/api/challenge`, { method: 'POST' })
    expect(over.status).toBe(429)
    expect((await jsonOf(over)).error).toMatch(/^rate-limited:/)
  })

  it('refuses a POST whose Origin names another host with 403 "restricted: cross-site request"', async () => {
    const s = await start()
    const res = await fetch(`${s.origin}/console/api/challenge`, { method: 'POST', headers: { Origin: 'https://evil.example' } })
    expect(res.status).toBe(403)
    expect((await jsonOf(res)).error).toBe('restricted: cross-site request')
    const same = await fetch(`${s.origin}/console/api/challenge`, { method: 'POST', headers: { Origin: s.origin } })
    expect(same.status).toBe(200)
  })

  it('signs out with the CSRF header only, and the cookie stops working', async () => {
    const s = await start()
    const { cookie, identity } = await signedIn(s.origin, operator)
    const noCsrf = await fetch(`${s.origin}/console/api/session`, { method: 'DELETE', headers: { cookie } })
    expect(noCsrf.status).toBe(403)
    expect((await jsonOf(noCsrf)).error).toMatch(/^restricted:/)
    const wrong = await fetch(`${s.origin}/console/api/session`, { method: 'DELETE', headers: { cookie, 'X-Apiary-CSRF': 'x'.repeat(43) } })
    expect(wrong.status).toBe(403)
    const out = await fetch(`${s.origin}/console/api/session`, { method: 'DELETE', headers: { cookie, 'X-Apiary-CSRF': identity.csrf } })
    expect(out.status).toBe(204)
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/)
    expect((await fetch(`${s.origin}/console/api/me`, { headers: { cookie } })).status).toBe(401)
  })
})
