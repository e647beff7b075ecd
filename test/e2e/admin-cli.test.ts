import { createHash } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { verifyEvent } from 'nostr-tools/pure'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runAdmin } from '../../src/cli/admin'
import { callManagement } from '../../src/client/admin-client'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { apiary } from '../support/cli'
import { makeKeys } from '../support/events'
import { startTestRelay, type TestRelay } from '../support/relay'
import { auth, client, fresh, publish, relayUrlOf } from '../support/relay-client'

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')

/** `apiary admin ...`; resolves with the exit code, never rejects on it. */
const apiaryAdmin = (...args: string[]) => apiary(['admin', ...args])

describe('the NIP-86 management client', () => {
  it('signs a NIP-98 event naming the URL (with its /), POST and the sha256 of the exact body', async () => {
    const keys = makeKeys()
    const seen: { method?: string; path?: string; headers?: IncomingHttpHeaders; body?: string } = {}
    const server = createServer((req, res) => {
      let body = ''
      req.setEncoding('utf8')
      req.on('data', (d: string) => {
        body += d
      })
      req.on('end', () => {
        Object.assign(seen, { method: req.method, path: req.url, headers: req.headers, body })
        res.writeHead(200, { 'Content-Type': 'application/nostr+json+rpc' }).end('{"result":true}')
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    try {
      const answer = await callManagement({
        url: `http://127.0.0.1:${port}`,
        secretKeyHex: hex(keys.secretKey),
        method: 'banpubkey',
        params: ['ab'.repeat(32), 'spam ✉'],
      })
      expect(answer).toEqual({ status: 200, body: { result: true } })
      expect(seen.method).toBe('POST')
      expect(seen.path).toBe('/')
      expect(seen.headers?.['content-type']).toBe('application/nostr+json+rpc')
      expect(JSON.parse(seen.body ?? '')).toEqual({ method: 'banpubkey', params: ['ab'.repeat(32), 'spam ✉'] })
      const [scheme, token] = (seen.headers?.authorization ?? '').split(' ')
      expect(scheme).toBe('Nostr')
      const event = JSON.parse(Buffer.from(token ?? '', 'base64').toString('utf8')) as NostrEvent
      expect(verifyEvent(event)).toBe(true)
      expect(event.kind).toBe(27235)
      expect(event.pubkey).toBe(keys.pubkey)
      expect(Math.abs(event.created_at - Date.now() / 1000)).toBeLessThan(5)
      expect(event.tags).toEqual([
        ['u', `http://127.0.0.1:${port}/`],
        ['method', 'POST'],
        [
          'payload',
          createHash('sha256')
            .update(Buffer.from(seen.body ?? '', 'utf8'))
            .digest('hex'),
        ],
      ])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('apiary admin argument mapping', () => {
  const pubkey = 'ab'.repeat(32)
  const id = 'cd'.repeat(32)
  // in-process, against a recording server: what each command line posts, without a relay or a tsx start each
  it.each([
    [['allowpubkey', pubkey, 'core', 'team'], 'allowpubkey', [pubkey, 'core team']],
    [['unallowpubkey', pubkey.toUpperCase()], 'unallowpubkey', [pubkey]],
    [['unbanpubkey', pubkey], 'unbanpubkey', [pubkey]],
    [['timeoutpubkey', pubkey, '600', 'cool', 'off'], 'timeoutpubkey', [pubkey, 600, 'cool off']],
    [['banevent', id, 'spam'], 'banevent', [id, 'spam']],
    [['allowevent', id], 'allowevent', [id]],
    [['changerelayname', 'The', 'Hive'], 'changerelayname', ['The Hive']],
    [['changerelaydescription', ''], 'changerelaydescription', ['']],
    [['changerelayicon', 'https://hive.test/icon.png'], 'changerelayicon', ['https://hive.test/icon.png']],
    [['allowkind', '30023'], 'allowkind', [30023]],
    [['disallowkind', '0'], 'disallowkind', [0]],
    [['blockip', '203.0.113.7', 'scraper'], 'blockip', ['203.0.113.7', 'scraper']],
    [['unblockip', '2001:db8::1'], 'unblockip', ['2001:db8::1']],
    [['listblockedips'], 'listblockedips', []],
    [
      ['setcommunitypolicy', '--read', 'members', '--auth-required', 'false'],
      'setcommunitypolicy',
      [{ readPolicy: 'members', authRequired: false }],
    ],
    [['setcommunitypolicy', '--public-member-lists', 'true'], 'setcommunitypolicy', [{ publicMemberLists: true }]],
    [['setcommunitypolicy', '--members-invite', 'true'], 'setcommunitypolicy', [{ membersInvite: true }]],
    [['createinvite'], 'createinvite', []],
    [['createinvite', '3600', '5'], 'createinvite', [3600, 5]],
    [['setagentrole', pubkey, 'planner'], 'setagentrole', [pubkey, 'planner']],
    [['setagentrole', pubkey, ''], 'setagentrole', [pubkey, '']],
    [['setroledomain', 'planner', 'worker', 'auditor'], 'setroledomain', ['planner', ['worker', 'auditor']]],
    [['setroledomain', 'planner'], 'setroledomain', ['planner', []]],
    [['setchannelroles', 'ops', 'worker'], 'setchannelroles', ['ops', ['worker']]],
    [['listroledomains'], 'listroledomains', []],
  ])('posts %j as %s with params %j', async (argv, method, params) => {
    const { calls, close, url } = await recordingServer()
    try {
      expect(await quietly(() => runAdmin([...argv, '--url', url], { APIARY_ADMIN_KEY: hex(makeKeys().secretKey) }))).toBe(0)
      expect(calls).toEqual([{ method, params }])
    } finally {
      await close()
    }
  })

  it.each([
    [['timeoutpubkey', pubkey, 'soon']],
    [['timeoutpubkey', pubkey, '0']],
    [['allowkind', '65536']],
    [['allowkind', '1.5']],
    [['allowevent', 'not-an-id']],
    [['unbanpubkey']],
    [['changerelayname']],
    [['setcommunitypolicy']],
    [['setcommunitypolicy', '--write', 'anyone']],
    [['setcommunitypolicy', '--auth-required', 'yes']],
    [['setcommunitypolicy', '--public-member-lists', 'open']],
    [['setcommunitypolicy', '--members-invite', 'yes']],
    [['createinvite', 'soon']],
    [['createinvite', '3600', '5', '7']],
    [['blockip']],
    [['setagentrole', pubkey, 'Planner!']],
    [['setagentrole', pubkey]],
    [['setroledomain']],
    [['setroledomain', 'planner', 'Not A Role']],
    [['setchannelroles', '']],
  ])('refuses %j with exit code 2, calling nothing', async (argv) => {
    const { calls, close, url } = await recordingServer()
    try {
      expect(await quietly(() => runAdmin([...argv, '--url', url], { APIARY_ADMIN_KEY: hex(makeKeys().secretKey) }))).toBe(2)
      expect(calls).toEqual([])
    } finally {
      await close()
    }
  })
})

/** An HTTP server that answers every NIP-86 call with `true` and records `{ method, params }`. */
async function recordingServer() {
  const calls: unknown[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (d: string) => {
      body += d
    })
    req.on('end', () => {
      calls.push(JSON.parse(body))
      res.writeHead(200, { 'Content-Type': 'application/nostr+json+rpc' }).end('{"result":true}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { calls, url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => server.close(resolve)) }
}

/** Run a CLI entry point here with its output swallowed; its exit code is the return value. */
async function quietly(run: () => Promise<number>): Promise<number> {
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
  try {
    return await run()
  } finally {
    out.mockRestore()
    err.mockRestore()
  }
}

describe('apiary admin', { timeout: 60_000 }, () => {
  const operator = makeKeys()
  const target = makeKeys()
  const member = makeKeys()
  const outsider = makeKeys()
  let relay: TestRelay
  let url: string
  beforeAll(async () => {
    relay = await startTestRelay({ operatorPubkeys: [operator.pubkey] })
    url = `http://127.0.0.1:${relay.port}/`
  })
  afterAll(() => relay.close())

  it('lists the supported methods for an operator and exits 0', async () => {
    const { code, stdout } = await apiaryAdmin('supportedmethods', '--url', url, '--key', hex(operator.secretKey))
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toContain('banpubkey')
  })

  it('bans a pubkey with a reason, which listbannedpubkeys then shows', async () => {
    const banned = await apiaryAdmin('banpubkey', target.pubkey, 'spam', '--url', url, '--key', hex(operator.secretKey))
    expect(banned.code).toBe(0)
    expect(JSON.parse(banned.stdout)).toBe(true)
    const listed = await apiaryAdmin('listbannedpubkeys', '--url', url, '--key', hex(operator.secretKey))
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.stdout)).toContainEqual({ pubkey: target.pubkey, reason: 'spam' })
  })

  it('exits 1 and prints the 403 "restricted:" answer for a key that is not an operator', async () => {
    const { code, stdout, stderr } = await apiaryAdmin('listbannedpubkeys', '--url', url, '--key', hex(target.secretKey))
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/HTTP 403: restricted:/)
  })

  it('allows a pubkey with a reason, which listallowedpubkeys then shows', async () => {
    const allowed = await apiaryAdmin('allowpubkey', member.pubkey, 'core', 'team', '--url', url, '--key', hex(operator.secretKey))
    expect(allowed).toMatchObject({ code: 0, stdout: 'true\n' })
    const listed = await apiaryAdmin('listallowedpubkeys', '--url', url, '--key', hex(operator.secretKey))
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.stdout)).toContainEqual({ pubkey: member.pubkey, reason: 'core team' })
  })

  it('sets the write policy to members from flags, after which a non-member\'s event is "restricted:" and a member\'s accepted', async () => {
    const set = await apiaryAdmin(
      'setcommunitypolicy',
      '--write',
      'members',
      '--auth-required',
      'true',
      '--url',
      url,
      '--key',
      hex(operator.secretKey),
    )
    expect(set).toMatchObject({ code: 0, stdout: 'true\n' })
    const c = await client(relay)
    try {
      expect((await auth(c, outsider, relayUrlOf(relay))).accepted).toBe(true)
      expect((await publish(c, fresh(outsider))).prefix).toBe('restricted')
      expect((await auth(c, member, relayUrlOf(relay))).accepted).toBe(true)
      expect((await publish(c, fresh(member))).accepted).toBe(true)
    } finally {
      c.close()
    }
  })

  it("exits 2 without calling the relay when a moderation method's arguments are wrong", async () => {
    const { code, stderr } = await apiaryAdmin('setcommunitypolicy', '--read', 'everyone', '--url', url, '--key', hex(operator.secretKey))
    expect(code).toBe(2)
    expect(stderr).toMatch(/--read must be one of public\|authenticated\|members/)
  })
})
