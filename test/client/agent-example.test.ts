import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { withGenerousRates } from '../e2e/helpers'
import { cleanEnv } from '../support/cli'
import { makeKeys, signEvent } from '../support/events'
import { startTestRelay, type TestRelay } from '../support/relay'
import { connect, type TestClient } from '../support/ws-client'

const run = promisify(execFile)
const ROOT = process.cwd()

/**
 * examples/agent.mjs run by plain node against `apiary-relay/client`, as an installed package provides it:
 * src/client and src/protocols compiled on their own (which also proves the client needs nothing else of
 * ours), in a folder outside the repository. test/e2e/package.test.ts covers the packed tarball itself.
 */
describe('the example agent (examples/agent.mjs)', { timeout: 60_000 }, () => {
  let dir: string
  let relay: TestRelay | undefined
  let agent: ChildProcess | undefined
  let out = ''

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'apiary-agent-example-'))
    const pkg = join(dir, 'node_modules/apiary-relay')
    mkdirSync(pkg, { recursive: true })
    const tscArgs = ['--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--lib', 'ES2023', '--types', 'node', '--skipLibCheck', '--strict']
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), ...tscArgs, '--rootDir', 'src', '--outDir', join(pkg, 'dist'), 'src/client/index.ts'], { cwd: ROOT })
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'apiary-relay', type: 'module', exports: { './client': './dist/client/index.js' } }))
    // its dependencies (ws, rxjs, @noble/*) from this checkout
    symlinkSync(join(ROOT, 'node_modules'), join(pkg, 'node_modules'))
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'host-program', private: true, type: 'module' }))
    cpSync(join(ROOT, 'examples/agent.mjs'), join(dir, 'agent.mjs'))
  }, 60_000)

  afterAll(async () => {
    agent?.kill('SIGKILL')
    await relay?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const waitFor = async (pattern: RegExp, count = 1, timeoutMs = 15_000) => {
    const end = Date.now() + timeoutMs
    while ((out.match(new RegExp(pattern, 'g')) ?? []).length < count) {
      if (Date.now() > end) throw new Error(`no ${pattern} (x${count}) in the agent's output:\n${out}`)
      await new Promise((r) => setTimeout(r, 25))
    }
  }

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
