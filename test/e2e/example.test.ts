import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)

describe('the embedding example', () => {
  it('runs as documented: a host program publishes a relay-signed note that a client receives', async () => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('APIARY_')))
    const { stdout } = await run(join(process.cwd(), 'node_modules/.bin/tsx'), ['examples/embed.ts'], { env, timeout: 30_000 })
    expect(stdout).toMatch(/publish outcome: \{ accepted: true/)
    expect(stdout).toContain('the client received:')
    expect(stdout).toContain('hello from the program that embeds the relay')
    expect(stdout).toMatch(/stats: \{ id: 'default', subscriptions: 1/)
  })
})
