import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { apiary, cleanEnv } from '../support/cli'
import { startTestRelay } from '../support/relay'
import { connect } from '../support/ws-client'

describe('the apiary CLI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'apiary-cli-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('adds a community bound to a host, says when a running relay serves it, and lists it', async () => {
    const added = await apiary(['community', 'add', 'team', '--host', 'Team.test', '--host', 'chat.test:8443', '--data-dir', dir])
    expect(added.code).toBe(0)
    expect(added.stdout).toMatch(/community team bound to team\.test, chat\.test:8443; a running relay serves it within 30s/)
    const listed = await apiary(['community', 'list', '--data-dir', dir])
    expect(listed.stdout.split('\n')).toContain('team\tchat.test:8443,team.test')
    // a fresh data directory starts with the default community, whichever command touched it first
    expect(listed.stdout.split('\n')).toContain('default\t127.0.0.1,[::1],localhost')
    // a relay started on that data directory serves the community on its host
    const relay = await startTestRelay({}, dir)
    try {
      expect(relay.relay.communityIds().sort()).toEqual(['default', 'team'])
      const c = await connect(relay.url, { host: `team.test:${relay.port}` })
      c.send(['REQ', 'team', { kinds: [1] }])
      await c.next((f) => f[0] === 'EOSE' && f[1] === 'team')
    } finally {
      await relay.close({ keepData: true })
    }
  })

  it.each([
    ['not a host', ['not a host']],
    ['a URL', ['https://team.test/']],
    ['a port out of range', ['team.test:70000']],
    ['no host at all', []],
  ])('refuses a community whose host is %s with exit code 2, storing nothing', async (_, hosts) => {
    const run = await apiary(['community', 'add', 'bad', ...hosts.flatMap((h) => ['--host', h]), '--data-dir', dir])
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/usage: apiary community/)
    const listed = await apiary(['community', 'list', '--data-dir', dir])
    expect(listed.stdout).not.toMatch(/^bad\t/m)
  })

  it('prints the effective config as JSON with the default port 7777', async () => {
    const { code, stdout } = await apiary(['config', 'print'])
    expect(code).toBe(0)
    const config = JSON.parse(stdout)
    expect(config.port).toBe(7777)
    expect(config.limits.maxSubscriptions).toBeGreaterThan(0)
  })

  it('prints the config with the relay key and every community’s own key redacted', async () => {
    const secret = 'cd'.repeat(32)
    const env = cleanEnv({
      APIARY_RELAY_SECRET_KEY: secret,
      APIARY_COMMUNITIES: JSON.stringify([
        { id: 'moved', hosts: ['moved.test'], secretKey: secret },
        { id: 'plain', hosts: ['plain.test'] },
      ]),
    })
    const { code, stdout } = await apiary(['config', 'print'], { env })
    expect(code).toBe(0)
    expect(stdout).not.toContain(secret)
    const config = JSON.parse(stdout)
    expect(config.relaySecretKey).toBe('<set>')
    expect(config.communities.map((c: { secretKey: string }) => c.secretKey)).toEqual(['<set>', ''])
  })

  it('generates a keypair with keygen', async () => {
    const { code, stdout } = await apiary(['keygen'])
    expect(code).toBe(0)
    expect(stdout).toMatch(/^pubkey [0-9a-f]{64}$/m)
    expect(stdout).toMatch(/^secret [0-9a-f]{64}$/m)
  })

  it('prints the usage and exits 0 for --help, and exits 2 with the usage on stderr for a usage error', async () => {
    for (const flag of ['--help', '-h', 'help']) {
      const help = await apiary([flag])
      expect(help).toMatchObject({ code: 0, stderr: '' })
      expect(help.stdout).toMatch(/^usage:\n {2}apiary start/)
    }
    for (const args of [[], ['frobnicate'], ['keygen', 'extra'], ['start', '--no-such-flag'], ['config', 'show']]) {
      const bad = await apiary(args)
      expect(bad.code, args.join(' ')).toBe(2)
      expect(bad.stdout).toBe('')
      expect(bad.stderr).toMatch(/usage/)
    }
  })
})
