import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { freePort } from '../support/redis-server'
import { fresh, publish } from '../support/relay-client'
import { runFailingStart, startRelayProcess, startUnderNpm } from '../support/relay-process'
import { connect } from '../support/ws-client'

/** true once something can bind the port again: the relay let go of it */
const portIsFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer()
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })

describe('apiary start as a process', { timeout: 60_000 }, () => {
  const dirs: string[] = []
  const dataDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'apiary-proc-'))
    dirs.push(d)
    return d
  }
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  it('closes gracefully on SIGTERM: 1001 to clients, the port free within 10 s, exit code 0, and every OK-true event kept', async () => {
    const dir = dataDir()
    const port = await freePort()
    const relay = await startRelayProcess(['--port', String(port), '--data-dir', dir])
    const c = await connect(relay.url)
    const keys = makeKeys()
    const sent = Array.from({ length: 20 }, () => fresh(keys))
    const oks = await Promise.all(sent.map((e) => publish(c, e)))
    expect(oks.every((o) => o.accepted)).toBe(true)
    const signalledAt = Date.now()
    relay.proc.kill('SIGTERM')
    expect((await c.closed).code).toBe(1001)
    expect(await relay.exited).toEqual({ code: 0, signal: null })
    expect(Date.now() - signalledAt).toBeLessThan(10_000)
    expect(await portIsFree(port)).toBe(true)

    // the same data directory, started again, serves everything that was acknowledged
    const again = await startRelayProcess(['--port', '0', '--data-dir', dir])
    try {
      const r = await connect(again.url)
      r.send(['REQ', 'all', { authors: [keys.pubkey] }])
      const got = (await r.collect('all')).map((f) => (f[2] as { id: string }).id)
      expect(got.sort()).toEqual(sent.map((e) => e.event.id).sort())
      r.close()
    } finally {
      again.proc.kill('SIGTERM')
      expect((await again.exited).code).toBe(0)
    }
  })

  it('closes gracefully on SIGINT too (Ctrl-C in a terminal)', async () => {
    const relay = await startRelayProcess(['--port', '0', '--data-dir', dataDir()])
    const c = await connect(relay.url)
    relay.proc.kill('SIGINT')
    expect((await c.closed).code).toBe(1001)
    expect(await relay.exited).toEqual({ code: 0, signal: null })
  })

  it.each([
    ['npx apiary start', (dir: string) => ['exec', '--', 'apiary', 'start', '--port', '0', '--data-dir', dir]],
    ['npm start', (dir: string) => ['start', '--', '--port', '0', '--data-dir', dir]],
  ])('stops when the npm process of `%s` is sent SIGTERM (npm does not pass it on): the relay closes too', async (_, args) => {
    const { npm, url, output, gone } = await startUnderNpm(args(dataDir()))
    const c = await connect(url)
    npm.kill('SIGTERM')
    expect((await c.closed).code).toBe(1001)
    await gone
    expect(await portIsFree(Number(new URL(url).port))).toBe(true)
    expect(output()).toContain('closing as for SIGTERM')
  })

  it('closes gracefully once, not as a second signal, when SIGTERM reaches npm and the relay together (a process group, as systemd sends it)', async () => {
    const { npm, url, output, gone } = await startUnderNpm(['start', '--', '--port', '0', '--data-dir', dataDir()], { detached: true })
    const c = await connect(url)
    process.kill(-npm.pid!, 'SIGTERM')
    expect((await c.closed).code).toBe(1001)
    await gone
    expect(output()).toContain('SIGTERM, closing')
    expect(output()).not.toContain('again')
    expect(await portIsFree(Number(new URL(url).port))).toBe(true)
  })

  it('exits 1 with one line naming the cause when its port is taken', async () => {
    const first = await startRelayProcess(['--port', '0', '--data-dir', dataDir()])
    try {
      const port = new URL(first.url).port
      const failed = await runFailingStart(['--port', port, '--data-dir', dataDir()], {})
      expect(failed.code).toBe(1)
      expect(failed.stderr).toMatch(/^apiary: cannot start: .*EADDRINUSE/m)
    } finally {
      first.proc.kill('SIGTERM')
      await first.exited
    }
  })
})

describe('apiary start with a backend it cannot reach', { timeout: 60_000 }, () => {
  const TIMEOUT_SECONDS = 2
  const redisUrl = 'redis://127.0.0.1:6379'
  const pgUrl = 'postgres://postgres@127.0.0.1:5432/test'
  const closedPort = () => freePort()
  const servers: ChildProcess[] = []
  afterAll(() => {
    for (const p of servers) p.kill('SIGKILL')
  })
  /** a private redis-server that wants a password the relay isn't given */
  async function passwordRedis(): Promise<string> {
    const port = await freePort()
    const p = spawn('redis-server', [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--requirepass',
      'not-yours',
    ])
    servers.push(p)
    await new Promise<void>((resolve) => {
      let out = ''
      p.stdout?.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('Ready to accept connections')) resolve()
      })
    })
    return `redis://127.0.0.1:${port}`
  }

  it.each([
    [
      'PostgreSQL with a database that does not exist',
      async () => ({ redis: redisUrl, pg: 'postgres://postgres@127.0.0.1:5432/apiary_no_such_db' }),
      /PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:5432\/apiary_no_such_db: database "apiary_no_such_db" does not exist/,
    ],
    [
      'PostgreSQL on a port where nothing listens',
      async () => ({ redis: redisUrl, pg: `postgres://postgres@127.0.0.1:${await closedPort()}/test` }),
      /PostgreSQL at postgres:\/\/postgres@127\.0\.0\.1:\d+\/test: connect ECONNREFUSED/,
    ],
    [
      'Redis on a port where nothing listens',
      async () => ({ redis: `redis://127.0.0.1:${await closedPort()}`, pg: pgUrl }),
      /Redis at redis:\/\/127\.0\.0\.1:\d+: connect ECONNREFUSED/,
    ],
    [
      'PostgreSQL refusing the login (no such role)',
      async () => ({ redis: redisUrl, pg: 'postgres://apiary_no_such_role@127.0.0.1:5432/test' }),
      /PostgreSQL at postgres:\/\/apiary_no_such_role@127\.0\.0\.1:5432\/test: role "apiary_no_such_role" does not exist/,
    ],
    [
      'Redis refusing the client (a password it does not have)',
      async () => ({ redis: await passwordRedis(), pg: pgUrl }),
      /Redis at redis:\/\/127\.0\.0\.1:\d+: NOAUTH/,
    ],
  ])('retries %s for startupTimeoutSeconds, logging each attempt, then exits non-zero with the cause', async (_, urls, cause) => {
    const { redis, pg } = await urls()
    const failed = await runFailingStart(['--port', '0', '--data-dir', mkdtempSync(join(tmpdir(), 'apiary-proc-'))], {
      APIARY_REDIS_URL: redis,
      APIARY_DATABASE_URL: pg,
      APIARY_STARTUP_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
    })
    expect(failed.code).toBe(1)
    expect(failed.elapsedMs).toBeLessThan((TIMEOUT_SECONDS + 5) * 1000)
    const lines = failed.stderr.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^apiary: cannot start: /)
    expect(lines[0]).toMatch(cause)
    // the structured log (stdout) has one line per failed attempt, each with its cause
    const attempts = failed.stdout
      .split('\n')
      .filter((l) => l.includes('unreachable at start; retrying'))
      .map((l) => JSON.parse(l) as { backend: string; attempt: number; cause: string })
    expect(attempts.length).toBeGreaterThanOrEqual(2)
    expect(attempts.map((a) => a.attempt)).toEqual(attempts.map((_, i) => i + 1))
    expect(attempts.every((a) => a.cause.length > 0)).toBe(true)
  })

  it('never prints a database password', async () => {
    const failed = await runFailingStart(['--port', '0', '--data-dir', mkdtempSync(join(tmpdir(), 'apiary-proc-'))], {
      APIARY_REDIS_URL: redisUrl,
      APIARY_DATABASE_URL: `postgres://postgres:s3cret-pw@127.0.0.1:${await closedPort()}/test`,
      APIARY_STARTUP_TIMEOUT_SECONDS: '1',
    })
    expect(failed.code).toBe(1)
    expect(failed.stderr).not.toContain('s3cret-pw')
    expect(failed.stderr).toContain('postgres://postgres:***@')
  })
})
