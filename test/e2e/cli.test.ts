import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { startTestRelay } from '../support/relay'
import { connect } from '../support/ws-client'

const run = promisify(execFile)
const TSX = join(process.cwd(), 'node_modules/.bin/tsx')

/** The CLI with no APIARY_* settings leaking in from the test environment. */
function apiary(...args: string[]) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('APIARY_')))
  return run(TSX, ['src/cli.ts', ...args], { env, timeout: 30_000 })
}

describe('the apiary CLI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'apiary-cli-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('adds a community bound to a host, and lists it', async () => {
    const added = await apiary('community', 'add', 'team', '--host', 'team.test', '--data-dir', dir)
    expect(added.stdout).toMatch(/team/)
    const listed = await apiary('community', 'list', '--data-dir', dir)
    expect(listed.stdout.split('\n')).toContain('team\tteam.test')
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

  it('prints the effective config as JSON with the default port 7777', async () => {
    const { stdout } = await apiary('config', 'print')
    const config = JSON.parse(stdout)
    expect(config.port).toBe(7777)
    expect(config.limits.maxSubscriptions).toBeGreaterThan(0)
  })

  it('generates a keypair with keygen', async () => {
    const { stdout } = await apiary('keygen')
    expect(stdout).toMatch(/^pubkey [0-9a-f]{64}$/m)
    expect(stdout).toMatch(/^secret [0-9a-f]{64}$/m)
  })
})
