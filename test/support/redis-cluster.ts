import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { eventually } from './eventually'
import { freePort } from './redis-server'

const run = promisify(execFile)

export interface RedisClusterOptions {
  /** masters, each a redis-server of its own; default 3 (the fewest redis-cli --cluster create accepts) */
  masters?: number
  /**
   * cluster-node-timeout, ms: how long a master may be unreachable before the others mark it failed. Redis's
   * default is 15 s; tests shorten it so the failed state arrives within the test.
   */
  nodeTimeoutMs?: number
  /**
   * cluster-require-full-coverage: Redis's default (true) stops the *whole* cluster (CLUSTERDOWN on every
   * key) once any slot has no live master; false keeps the surviving masters serving their slots.
   */
  requireFullCoverage?: boolean
}

export interface PrivateRedisCluster {
  /** one port per master, in creation order */
  ports: number[]
  /** redis+cluster://127.0.0.1:P1,127.0.0.1:P2,... (every master as a seed) */
  url: string
  /** the port of the master that serves `key`'s hash slot (asked of a live master: CLUSTER KEYSLOT + SLOTS) */
  masterOf(key: string): Promise<number>
  /** SIGKILL that master's process: a crash (clients see the socket drop), nothing is flushed */
  kill(port: number): Promise<void>
  /** start it again on the same port and nodes file: it rejoins with its slots, empty (nothing persisted) */
  restart(port: number): Promise<void>
  /** how many connections to that node are in pub/sub mode (CLIENT LIST flag P) */
  subscribersOn(port: number): Promise<number>
  /** until every live node's CLUSTER INFO says `cluster_state:<state>`, at most `ms` */
  waitForState(state: 'ok' | 'fail', ms?: number): Promise<void>
  /** kill every node and delete the nodes files */
  stop(): Promise<void>
}

/** A Redis Cluster of the test's own on free ports, for tests that need several masters or kill one. */
export async function startRedisCluster(opts: RedisClusterOptions = {}): Promise<PrivateRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'apiary-redis-cluster-'))
  /** the current process of each port; `spawned` has every one, so stop() also ends one a failed start left */
  const procs = new Map<number, ChildProcess>()
  const spawned = new Set<ChildProcess>()
  // each node also listens on a cluster bus port, by default its port + 10000: that one may be taken, or past
  // 65535 for an ephemeral port, so it is picked free as well; the OS may hand out one port twice in a row
  const taken = new Set<number>()
  const distinctFreePort = async () => {
    let port = await freePort()
    while (taken.has(port)) port = await freePort()
    taken.add(port)
    return port
  }
  const ports: number[] = []
  const busPorts = new Map<number, number>()
  for (let i = 0; i < (opts.masters ?? 3); i++) {
    const port = await distinctFreePort()
    ports.push(port)
    busPorts.set(port, await distinctFreePort())
  }

  const launch = (port: number) =>
    new Promise<void>((resolve, reject) => {
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
      args.push(
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-port',
        String(busPorts.get(port)),
      )
      args.push('--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 15_000))
      args.push('--cluster-require-full-coverage', opts.requireFullCoverage === false ? 'no' : 'yes')
      const p = spawn('redis-server', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
      procs.set(port, p)
      spawned.add(p)
      p.once('exit', () => spawned.delete(p))
      let out = ''
      const onData = (d: Buffer) => {
        out += d.toString()
        if (out.includes('Ready to accept connections')) {
          p.stdout?.off('data', onData)
          // drain from now on, so a chatty node never blocks on a full pipe
          p.stdout?.resume()
          resolve()
        }
      }
      p.stdout?.on('data', onData)
      p.stderr?.resume()
      p.once('error', reject)
      p.once('exit', (code) => reject(new Error(`redis-server :${port} exited (${code}): ${out.slice(-500)}`)))
    })

  const end = async (p: ChildProcess | undefined) => {
    if (!p || p.exitCode !== null || p.signalCode !== null) return
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve())
      p.kill('SIGKILL')
    })
  }
  const kill = (port: number) => end(procs.get(port))

  const live = () =>
    ports.filter((port) => {
      const p = procs.get(port)
      return p !== undefined && p.exitCode === null && p.signalCode === null
    })

  /** one short-lived plain connection (no retries: a dead node answers with an error at once) */
  async function ask<T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> {
    const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 })
    r.on('error', () => {})
    try {
      await r.connect()
      return await fn(r)
    } finally {
      r.disconnect()
    }
  }

  const waitForState = async (state: 'ok' | 'fail', ms = 20_000) => {
    const want = `cluster_state:${state}`
    // each live node's cluster_state line, or why it did not answer
    const states = () =>
      Promise.all(
        live().map((port) =>
          ask(port, (r) => r.cluster('INFO')).then(
            (info) => (info as string).split('\r\n').find((line) => line.startsWith('cluster_state:')) ?? info,
            (e: Error) => e.message,
          ),
        ),
      )
    await eventually(states, (all) => all.every((s) => s === want), `every live node at ${want}`, { timeoutMs: ms, intervalMs: 50 })
  }

  // a worker that exits without its afterAll (a crash, a timeout) must not leave servers running
  const onExit = () => {
    for (const p of spawned) p.kill('SIGKILL')
  }
  process.once('exit', onExit)
  const stop = async () => {
    process.off('exit', onExit)
    await Promise.all([...spawned].map(end))
    rmSync(dir, { recursive: true, force: true })
  }

  try {
    await Promise.all(ports.map(launch))
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], {
      cwd: dir,
    })
    await waitForState('ok')
  } catch (error) {
    await stop()
    throw error
  }

  return {
    ports,
    url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    async masterOf(key) {
      const [port] = live()
      if (port === undefined) throw new Error('no live node to ask')
      return ask(port, async (r) => {
        const slot = Number(await r.cluster('KEYSLOT', key))
        const range = (await r.cluster('SLOTS')).find(([from, to]) => from <= slot && slot <= to)
        const master = range?.[2]
        if (!master) throw new Error(`slot ${slot} is served by no master`)
        return Number(master[1])
      })
    },
    subscribersOn: (port) =>
      ask(
        port,
        async (r) =>
          String(await r.client('LIST'))
            .split('\n')
            .filter((line) => /\bflags=\S*P/.test(line)).length,
      ),
    kill,
    restart: launch,
    waitForState,
    stop,
  }
}
