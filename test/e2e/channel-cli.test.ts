import { createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runAgent } from '../../src/cli/agent'
import { runChannel } from '../../src/cli/channel'
import { checkOwnerAttestation, parseOwnerAttestation } from '../../src/protocols/nip-oa'
import { apiary as runApiary } from '../support/cli'
import { makeKeys } from '../support/events'
import { channelState, editMetadata, hasFlag, post, tagValues } from '../support/nip29-client'
import { startTestRelay, type TestRelay } from '../support/relay'
import { auth, client, nowSeconds, relayUrlOf } from '../support/relay-client'
import { withGenerousRates } from '../support/relay-fixtures'

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex')
/** what `apiary channel` prints for an accepted event: its id */
const SENT = /^ok [0-9a-f]{64}\n$/

const apiary = (...args: string[]) => runApiary(args)

describe('apiary channel', { timeout: 60_000 }, () => {
  const owner = makeKeys()
  const member = makeKeys()
  const stranger = makeKeys()
  let relay: TestRelay
  let wsUrl: string
  const as = (keys: { secretKey: Uint8Array }) => ['--url', wsUrl, '--key', hex(keys.secretKey)]
  beforeAll(async () => {
    relay = await startTestRelay(withGenerousRates({}))
    wsUrl = relayUrlOf(relay)
  })
  afterAll(() => relay.close())

  it('creates a closed channel and adds a member, and the relay publishes them in 39000 and 39002', async () => {
    const created = await apiary('channel', 'create', 'hive', '--name', 'The Hive', '--about', 'bees only', '--closed', ...as(owner))
    expect(created).toMatchObject({ code: 0, stdout: expect.stringMatching(SENT) })
    const added = await apiary('channel', 'add', 'hive', member.pubkey.toUpperCase(), ...as(owner))
    expect(added).toMatchObject({ code: 0, stdout: expect.stringMatching(SENT) })
    const c = await client(relay)
    try {
      const { metadata, admins, members } = await channelState(c, 'hive')
      expect(metadata?.pubkey).toBe(relay.relay.communityPubkey('default'))
      expect(tagValues(metadata, 'name')).toEqual(['The Hive'])
      expect(tagValues(metadata, 'about')).toEqual(['bees only'])
      expect(hasFlag(metadata, 'closed')).toBe(true)
      expect(hasFlag(metadata, 'private')).toBe(false)
      expect(tagValues(admins, 'p')).toEqual([owner.pubkey])
      expect(tagValues(members, 'p').sort()).toEqual([owner.pubkey, member.pubkey].sort())
    } finally {
      c.close()
    }
  })

  it('lists channels one per line with their name and flags, a hidden one to its members only', async () => {
    expect((await apiary('channel', 'create', 'back-room', '--name', 'Back room', '--private', ...as(owner))).code).toBe(0)
    expect((await apiary('channel', 'create', 'den', '--name', 'Den', '--hidden', ...as(owner))).code).toBe(0)
    const { code, stdout } = await apiary('channel', 'list', ...as(stranger))
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines).toContain('hive\tThe Hive\tpublic closed')
    expect(lines).toContain('back-room\tBack room\tprivate open')
    expect(lines.filter((l) => l.startsWith('den\t'))).toEqual([])
    const mine = (await apiary('channel', 'list', ...as(owner))).stdout.trim().split('\n')
    expect(mine).toContain('den\tDen\tpublic open hidden')
  })

  it("exits 1 on a join request to a closed channel with the relay's \"restricted:\" (pending); the joiner's post is refused, a member's accepted", async () => {
    await expect(apiary('channel', 'create', 'queue', '--closed', '--restricted', ...as(owner))).resolves.toMatchObject({ code: 0 })
    await expect(apiary('channel', 'add', 'queue', member.pubkey, ...as(owner))).resolves.toMatchObject({ code: 0 })
    const joined = await apiary('channel', 'join', 'queue', ...as(stranger))
    expect(joined).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/^apiary channel: restricted: .*pending/) })
    const c = await client(relay)
    try {
      expect((await auth(c, stranger, wsUrl)).accepted).toBe(true)
      expect((await post(c, stranger, 'queue')).ok.prefix).toBe('restricted')
      expect((await auth(c, member, wsUrl)).accepted).toBe(true)
      expect((await post(c, member, 'queue')).ok.accepted).toBe(true)
      const { members } = await channelState(c, 'queue')
      expect(tagValues(members, 'p')).not.toContain(stranger.pubkey)
    } finally {
      c.close()
    }
  })

  it('edits one flag and keeps the others and the supported kinds, since a 9002 carrying flags states them all', async () => {
    const id = 'Mixed-Case'
    await expect(apiary('channel', 'create', id, '--private', '--closed', ...as(owner))).resolves.toMatchObject({ code: 0 })
    const c = await client(relay)
    try {
      expect((await auth(c, owner, wsUrl)).accepted).toBe(true)
      expect((await editMetadata(c, owner, id, { supportedKinds: [9, 11] })).ok.accepted).toBe(true)
      expect(await apiary('channel', 'edit', id, '--restricted', ...as(owner))).toMatchObject({
        code: 0,
        stdout: expect.stringMatching(SENT),
      })
      const { metadata } = await channelState(c, id)
      expect(metadata?.tags.filter((t) => t.length === 1).map((t) => t[0])).toEqual(['private', 'restricted', 'closed'])
      expect(metadata?.tags.find((t) => t[0] === 'supported_kinds')).toEqual(['supported_kinds', '9', '11'])
      expect(await apiary('channel', 'edit', id, '--public', '--open', ...as(owner))).toMatchObject({ code: 0 })
      const after = (await channelState(c, id)).metadata
      expect(after?.tags.filter((t) => t.length === 1).map((t) => t[0])).toEqual(['restricted'])
    } finally {
      c.close()
    }
    const { stdout } = await apiary('channel', 'list', ...as(stranger))
    expect(stdout.trim().split('\n')).toContain(`${id}\t${id}\tpublic open restricted`)
  })

  it("exits 1 without sending an edit of flags when it cannot read the channel's flags", async () => {
    const { code, stderr } = await apiary('channel', 'edit', 'no-such-channel', '--private', ...as(owner))
    expect(code).toBe(1)
    expect(stderr).toMatch(/cannot read channel no-such-channel's flags/)
  })

  it('exits 1 and prints the relay\'s "restricted:" reason when a non-admin adds a member', async () => {
    const { code, stdout, stderr } = await apiary('channel', 'add', 'hive', stranger.pubkey, ...as(stranger))
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/^apiary channel: restricted: /)
  })

  it('gives roles with --role, and makes an invite code that a join with --code redeems in a closed channel', async () => {
    const joiner = makeKeys()
    const run = (...argv: string[]) => inProcess(() => runChannel(argv, {}))
    expect((await run('create', 'guild', '--closed', ...as(owner))).code).toBe(0)
    expect((await run('add', 'guild', member.pubkey, '--role', 'moderator', '--role', 'gardener', ...as(owner))).code).toBe(0)
    expect(await run('invite', 'guild', 'come-in', '--uses', '2', '--expires-at', String(nowSeconds() + 600), ...as(owner))).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(SENT),
    })
    expect(await run('invite', 'guild', 'bad', '--uses', '0', ...as(owner))).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^apiary channel: invalid: /),
    })
    expect((await run('join', 'guild', '--code', 'come-in', ...as(joiner))).code).toBe(0)
    const c = await client(relay)
    try {
      const { admins, members } = await channelState(c, 'guild')
      expect(admins?.tags.filter((t) => t[0] === 'p')).toContainEqual(['p', member.pubkey, 'moderator'])
      expect(members?.tags.filter((t) => t[0] === 'p')).toContainEqual(['p', member.pubkey, 'moderator', 'gardener'])
      expect(tagValues(members, 'p')).toContain(joiner.pubkey)
    } finally {
      c.close()
    }
  })

  it('exits 1 when nothing listens on the --url', async () => {
    const port = await freePort()
    const { code, stderr } = await apiary('channel', 'list', '--url', `ws://127.0.0.1:${port}`, '--key', hex(owner.secretKey))
    expect(code).toBe(1)
    expect(stderr).toMatch(/cannot connect/)
  })

  it('exits 2 with the usage on a bad command line', async () => {
    const { code, stdout, stderr } = await apiary('channel', 'create', 'Not An Id', ...as(owner))
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/usage: apiary channel/)
  })

  // in-process: one CLI start per case would be most of this file's run time
  it.each([
    ['no command', []],
    ['an unknown command', ['rename', 'hive']],
    ['an id with capitals and spaces', ['create', 'Not An Id']],
    ['an id of 65 characters', ['create', 'x'.repeat(65)]],
    ['an edit that changes nothing', ['edit', 'hive']],
    ['--private with --public', ['edit', 'hive', '--private', '--public']],
    ['--closed with --open', ['create', 'hive', '--closed', '--open']],
    ['--hidden with --visible', ['edit', 'hive', '--hidden', '--visible']],
    ['--restricted with --unrestricted', ['create', 'hive', '--restricted', '--unrestricted']],
    ['an id with a control character', ['join', 'bell\u0007']],
    ['an npub for a pubkey', ['add', 'hive', 'npub1xyz']],
    ['a second pubkey', ['remove', 'hive', 'ab'.repeat(32), 'cd'.repeat(32)]],
    ['an argument list does not take', ['list', 'hive']],
    ['an unknown flag', ['join', 'hive', '--colour', 'red']],
    ['an invite without a code', ['invite', 'hive']],
    ['an invite with two codes', ['invite', 'hive', 'a', 'b']],
  ])('refuses %s with exit code 2, before connecting', async (_, argv) => {
    const { code, stderr } = await inProcess(() => runChannel([...argv, ...as(owner)], {}))
    expect(code).toBe(2)
    expect(stderr).toMatch(/usage: apiary channel/)
  })

  it('refuses an http:// --url and a missing key with exit code 2', async () => {
    const http = await inProcess(() =>
      runChannel(['join', 'hive', '--url', `http://127.0.0.1:${relay.port}`, '--key', hex(owner.secretKey)], {}),
    )
    expect(http).toMatchObject({ code: 2, stderr: expect.stringMatching(/--url must be the relay ws\(s\) URL/) })
    const keyless = await inProcess(() => runChannel(['join', 'hive', '--url', wsUrl], {}))
    expect(keyless).toMatchObject({ code: 2, stderr: expect.stringMatching(/APIARY_ADMIN_KEY/) })
  })
})

describe('apiary agent attest', { timeout: 60_000 }, () => {
  it('prints a NIP-OA auth tag that verifies for the agent, with the conditions verbatim', async () => {
    const owner = makeKeys()
    const agent = makeKeys()
    const until = nowSeconds() + 3600
    const { code, stdout } = await apiary(
      'agent',
      'attest',
      agent.pubkey,
      '--conditions',
      `kind=1&created_at<${until}`,
      '--key',
      hex(owner.secretKey),
    )
    expect(code).toBe(0)
    const tag = JSON.parse(stdout) as string[]
    expect(tag.slice(0, 3)).toEqual(['auth', owner.pubkey, `kind=1&created_at<${until}`])
    const parsed = parseOwnerAttestation([tag])
    if (!parsed.ok || !parsed.value) throw new Error(`tag does not parse: ${stdout}`)
    expect(checkOwnerAttestation(parsed.value, { agentPubkey: agent.pubkey, nowSeconds: nowSeconds(), kind: 1 })).toEqual({
      ok: true,
      value: { owner: owner.pubkey },
    })
    expect(checkOwnerAttestation(parsed.value, { agentPubkey: makeKeys().pubkey, nowSeconds: nowSeconds() }).ok).toBe(false)
  })

  it('warns on stderr that an attestation without created_at< never expires', async () => {
    const { code, stdout, stderr } = await apiary('agent', 'attest', makeKeys().pubkey, '--key', hex(makeKeys().secretKey))
    expect(code).toBe(0)
    expect(JSON.parse(stdout)[2]).toBe('')
    expect(stderr).toMatch(/never expires/)
  })

  const owner = makeKeys()
  it.each([
    ['a clause with a leading zero', [makeKeys().pubkey, '--conditions', 'kind=01', '--key', hex(owner.secretKey)]],
    ['an unknown clause', [makeKeys().pubkey, '--conditions', 'until=5', '--key', hex(owner.secretKey)]],
    ['the owner attesting itself', [owner.pubkey, '--key', hex(owner.secretKey)]],
    ['no key', [makeKeys().pubkey]],
    ['no agent pubkey', ['--key', hex(owner.secretKey)]],
  ])('refuses %s with exit code 2 and prints no tag', async (_, argv) => {
    const { code, stdout, stderr } = await inProcess(() => runAgent(['attest', ...argv], {}))
    expect(code).toBe(2)
    expect(stdout).toBe('')
    expect(stderr).toMatch(/usage: apiary agent/)
  })
})

/** Run a CLI entry point here, capturing what it writes; its exit code is the return value. */
async function inProcess(run: () => number | Promise<number>): Promise<{ code: number; stdout: string; stderr: string }> {
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

/** A port nothing listens on: bound once by us, then released. */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}
