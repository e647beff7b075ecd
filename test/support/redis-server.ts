import { type ChildProcess, spawn } from 'node:child_process'
import { createServer } from 'node:net'

/** A free TCP port on 127.0.0.1 (the OS picks; we release it right away for the server to bind). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

export interface PrivateRedis {
  port: number
  url: string
  /** SIGKILL: a crash, not a shutdown (clients see the socket drop) */
  kill(): Promise<void>
  /** start again on the same port (empty: nothing is persisted) */
  restart(): Promise<void>
  /** SIGSTOP / SIGCONT: the sockets stay open and nothing is answered, as in a partition without a reset */
  pause(): void
  resume(): void
  stop(): Promise<void>
}

/** A redis-server of the test's own on a free port, for fault tests that kill it (never the shared one). */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort()
  let proc: ChildProcess | undefined
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const p = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      proc = p
      let out = ''
      const onData = (d: Buffer) => {
        out += d.toString()
        if (out.includes('Ready to accept connections')) {
          p.stdout?.off('data', onData)
          resolve()
        }
      }
      p.stdout?.on('data', onData)
      p.once('error', reject)
      p.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out.slice(-500)}`)))
    })
  const kill = async () => {
    const p = proc
    // a killed process has a signalCode and no exitCode: either means it is gone
    if (!p || p.exitCode !== null || p.signalCode !== null) return
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve())
      p.kill('SIGKILL')
    })
  }
  await launch()
  const signal = (sig: NodeJS.Signals) => () => void proc?.kill(sig)
  const stop = async () => {
    // a stopped process takes SIGKILL too, but its exit is only reported once it runs again
    proc?.kill('SIGCONT')
    await kill()
  }
  return { port, url: `redis://127.0.0.1:${port}`, kill, restart: launch, pause: signal('SIGSTOP'), resume: signal('SIGCONT'), stop }
}
