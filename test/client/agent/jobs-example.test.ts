import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanEnv } from '../../support/cli'
import { eventually } from '../../support/eventually'
import { installPackedPackage } from '../../support/packed'
import { startTestRelay, type TestRelay } from '../../support/relay'
import { withGenerousRates } from '../../support/relay-fixtures'

const ROOT = process.cwd()
const run = promisify(execFile)

/**
 * examples/worker.mjs and examples/requester.mjs run by plain node in a folder outside the repository, against
 * `apiary-relay/client` from the packed tarball installed as a user installs it (test/support/packed.ts).
 */
describe('the dispatched-jobs example pair (examples/worker.mjs, examples/requester.mjs)', { timeout: 90_000 }, () => {
  let dir: string
  let relay: TestRelay | undefined
  let worker: ChildProcess | undefined
  let out = ''

  beforeAll(async () => {
    dir = await installPackedPackage()
    for (const f of ['worker.mjs', 'requester.mjs']) cpSync(join(ROOT, 'examples', f), join(dir, f))
  }, 120_000)

  afterAll(async () => {
    worker?.kill('SIGKILL')
    await relay?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const waitFor = (pattern: RegExp, count = 1) =>
    eventually(
      () => out,
      (text) => (text.match(new RegExp(pattern, 'g')) ?? []).length >= count,
      `${pattern} (x${count}) in the worker's output`,
      { timeoutMs: 15_000 },
    )
  const ask = async (url: string, input: string) =>
    (await run(process.execPath, ['requester.mjs', url, input], { cwd: dir, env: cleanEnv(), timeout: 30_000 })).stdout

  it('streams and answers a job, keeps serving across a relay restart, and says goodbye on SIGINT', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'apiary-jobs-example-data-'))
    relay = await startTestRelay(withGenerousRates({}), dataDir)
    worker = spawn(process.execPath, ['worker.mjs', relay.url], { cwd: dir, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    worker.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
    })
    worker.stderr?.on('data', (d: Buffer) => {
      out += d.toString()
    })
    const exited = new Promise<number | null>((resolve) => worker?.once('exit', (code) => resolve(code)))
    await waitFor(/is ACTIVE on ws:/)

    const first = await ask(relay.url, 'hello hive')
    expect(first).toMatch(/chunk 0: HELLO \nchunk 1: HIVE \n/)
    expect(first).toMatch(/result from [0-9a-f]{8}: HELLO HIVE!/)
    expect(out).toMatch(/job [0-9a-f]{8} \(generation 1\): hello hive/)

    const port = relay.port
    await relay.close({ keepData: true })
    relay = await startTestRelay(withGenerousRates({ port }), dataDir)
    await waitFor(/state ACTIVE/, 2)
    expect(await ask(relay.url, 'still here')).toMatch(/result from [0-9a-f]{8}: STILL HERE!/)

    worker.kill('SIGINT')
    expect(await exited).toBe(0)
    expect(out).toMatch(/goodbye/)
    await relay.close()
    relay = undefined
    rmSync(dataDir, { recursive: true, force: true })
  })
})
