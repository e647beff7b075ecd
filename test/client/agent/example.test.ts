import { type ChildProcess, spawn } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { cleanEnv } from '../../support/cli'
import { makeKeys, signEvent } from '../../support/events'
import { eventually } from '../../support/eventually'
import { installPackedPackage } from '../../support/packed'
import { startTestRelay, type TestRelay } from '../../support/relay'
import { withGenerousRates } from '../../support/relay-fixtures'
import { connect, type TestClient } from '../../support/ws-client'

const ROOT = process.cwd()

/**
 * examples/agent.mjs run by plain node in a folder outside the repository, against `apiary-relay/client` from
 * the packed tarball installed as a user installs it (test/support/packed.ts), production dependencies only.
 */
describe('the example agent (examples/agent.mjs)', { timeout: 60_000 }, () => {
  let dir: string
  let relay: TestRelay | undefined
  let agent: ChildProcess | undefined
  let out = ''

  beforeAll(async () => {
    // agent.mjs imports only node:crypto and apiary-relay/client, whose own dependencies come with the package
    dir = await installPackedPackage()
    cpSync(join(ROOT, 'examples/agent.mjs'), join(dir, 'agent.mjs'))
  }, 120_000)

  afterAll(async () => {
    agent?.kill('SIGKILL')
    await relay?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const waitFor = (pattern: RegExp, count = 1, timeoutMs = 15_000) =>
    eventually(
      () => out,
      (text) => (text.match(new RegExp(pattern, 'g')) ?? []).length >= count,
      `${pattern} (x${count}) in the agent's output`,
      { timeoutMs },
    )

  const askEcho = async (c: TestClient, content: string): Promise<NostrEvent> => {
    const job = signEvent(makeKeys(), { kind: 5050, content })
    c.send(['REQ', `answer-${job.event.id.slice(0, 16)}`, { kinds: [6050], '#e': [job.event.id] }])
    await c.next((f) => f[0] === 'EOSE')
    c.send(['EVENT', job.event])
    expect((await c.ok(job.event.id))[2]).toBe(true)
    const f = await c.next((x) => x[0] === 'EVENT' && x[1] === `answer-${job.event.id.slice(0, 16)}`, 10_000)
    return f[2] as NostrEvent
  }

  it('registers echo, answers a job with the same content, survives a relay restart, and says goodbye on SIGINT', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'apiary-agent-example-data-'))
    relay = await startTestRelay(withGenerousRates({}), dataDir)
    agent = spawn(process.execPath, ['agent.mjs', relay.url], { cwd: dir, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    agent.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
    })
    agent.stderr?.on('data', (d: Buffer) => {
      out += d.toString()
    })
    const exited = new Promise<number | null>((resolve) => agent?.once('exit', (code) => resolve(code)))
    await waitFor(/is ACTIVE on ws:/)
    expect(out).toMatch(/state INIT[\s\S]*state DISCOVERED[\s\S]*state AUTHENTICATED[\s\S]*state ACTIVE/)

    let c = await connect(relay.url)
    expect((await askEcho(c, 'hello, echo')).content).toBe('hello, echo')
    c.close()

    const port = relay.port
    await relay.close({ keepData: true })
    relay = await startTestRelay(withGenerousRates({ port }), dataDir)
    await waitFor(/state ACTIVE/, 2)
    c = await connect(relay.url)
    const again = await askEcho(c, 'still there?')
    expect(again.content).toBe('still there?')
    c.close()

    agent.kill('SIGINT')
    expect(await exited).toBe(0)
    expect(out).toMatch(/state CLOSED: stopped/)
    expect(out).toMatch(/goodbye: sent [2-9]/)
    await relay.close()
    relay = undefined
    rmSync(dataDir, { recursive: true, force: true })
  })
})
