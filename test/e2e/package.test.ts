import { execFile } from 'node:child_process'
import { cpSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanEnv } from '../support/cli'
import { installPackedPackage } from '../support/packed'

const run = promisify(execFile)
const ROOT = process.cwd()

/**
 * The package as a user gets it (test/support/packed.ts), with `ws` beside it, and the README's embedding
 * program run there by plain `node`.
 */
describe('the published package', { timeout: 120_000 }, () => {
  let dir: string
  beforeAll(async () => {
    dir = await installPackedPackage(['ws'])
    cpSync(join(ROOT, 'examples/embed.mjs'), join(dir, 'embed.mjs'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('installs without dev dependencies: no TypeScript, tsx or test tools come along', () => {
    const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> }
    const installed = Object.keys(lock.packages).map((p) => p.replace(/^.*node_modules\//, ''))
    expect(installed).toContain('apiary-relay')
    for (const dev of ['typescript', 'tsx', 'vitest', 'esbuild', 'nostr-tools', '@biomejs/biome']) expect(installed).not.toContain(dev)
  })

  it('runs the README embedding program with plain node: supervision, a relay-signed note received live, Stats', async () => {
    const { stdout } = await run(process.execPath, ['embed.mjs'], { cwd: dir, env: cleanEnv(), timeout: 30_000 })
    expect(stdout).toMatch(/^listening on ws:\/\/127\.0\.0\.1:\d+; supervision so far: .*started/m)
    expect(stdout).toContain('published: accepted=true')
    expect(stdout).toContain('received: hello from the program that embeds the relay (signed by the relay: true)')
    expect(stdout).toMatch(/^stats: \{"id":"default","subscriptions":1,"connections":1,"eventsAccepted":1,"presenceHolders":0\}$/m)
  })

  it('exports the client entry point, and its types, under apiary-relay/client', async () => {
    const probe =
      "import('apiary-relay/client').then((m) => console.log(typeof m.openRelaySession, typeof m.callManagement, typeof m.AgentClient, new m.AgentError('blocked', 'x').code))"
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', probe], { cwd: dir, env: cleanEnv() })
    expect(stdout.trim()).toBe('function function function blocked')
    const pkg = JSON.parse(readFileSync(join(dir, 'node_modules/apiary-relay/package.json'), 'utf8'))
    for (const entry of ['.', './client']) {
      const types = join(dir, 'node_modules/apiary-relay', pkg.exports[entry].types)
      expect(readFileSync(types, 'utf8').length).toBeGreaterThan(0)
    }
  })

  it('runs the bin from the installed package: apiary --help exits 0', async () => {
    const { stdout } = await run(join(dir, 'node_modules/.bin/apiary'), ['--help'], { cwd: dir, env: cleanEnv() })
    expect(stdout).toMatch(/^usage:/)
  })
})
