import { type ChildProcess, spawn } from 'node:child_process'
import { APIARY_BIN, cleanEnv } from './cli'

/** Budgets (as env) high enough that one client pipelining a burst never meets a rate limit. */
export const GENEROUS_ENV: Record<string, string> = {
  APIARY_RATE_LIMITS_HUMAN_EVENTS_RATE_PER_SECOND: '100000',
  APIARY_RATE_LIMITS_HUMAN_EVENTS_BURST: '100000',
  APIARY_RATE_LIMITS_HUMAN_REQS_RATE_PER_SECOND: '100000',
  APIARY_RATE_LIMITS_HUMAN_REQS_BURST: '100000',
  APIARY_RATE_LIMITS_CONNECTIONS_PER_IP_RATE_PER_SECOND: '100000',
  APIARY_RATE_LIMITS_CONNECTIONS_PER_IP_BURST: '100000',
  APIARY_RATE_LIMITS_AUTH_PER_IP_RATE_PER_SECOND: '100000',
  APIARY_RATE_LIMITS_AUTH_PER_IP_BURST: '100000',
  APIARY_LIMITS_MAX_PENDING_UPGRADES_PER_IP: '100000',
}

export interface RelayProcess {
  proc: ChildProcess
  /** ws://127.0.0.1:<port>, from the relay's "listening on" line */
  url: string
  stdout(): string
  stderr(): string
  /** resolves with the exit code (null when killed by a signal) and the signal */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** `apiary start ...args` as its own process; resolves once it prints that it listens (or rejects if it exits). */
export function startRelayProcess(args: string[], env: Record<string, string> = {}): Promise<RelayProcess> {
  const proc = spawn(process.execPath, [APIARY_BIN, 'start', ...args], {
    env: cleanEnv({ APIARY_LOG_LEVEL: 'warn', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  proc.stderr?.on('data', (d: Buffer) => {
    err += d.toString()
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  )
  return new Promise((resolve, reject) => {
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
      const m = /apiary relay listening on (ws:\/\/\S+)/.exec(out)
      if (m) resolve({ proc, url: m[1]!, stdout: () => out, stderr: () => err, exited })
    })
    void exited.then(({ code, signal }) =>
      reject(new Error(`apiary start exited (${code ?? signal}) before listening: ${err.slice(-500)}`)),
    )
  })
}

/** Runs `apiary start` expecting it to fail; resolves with how and how fast it ended. */
export function runFailingStart(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string; elapsedMs: number }> {
  const started = Date.now()
  const proc = spawn(process.execPath, [APIARY_BIN, 'start', ...args], {
    env: cleanEnv({ APIARY_LOG_LEVEL: 'warn', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  proc.stdout?.on('data', (d: Buffer) => {
    out += d.toString()
  })
  proc.stderr?.on('data', (d: Buffer) => {
    err += d.toString()
  })
  return new Promise((resolve) => proc.once('exit', (code) => resolve({ code, stdout: out, stderr: err, elapsedMs: Date.now() - started })))
}

export interface NpmRelay {
  npm: ChildProcess
  url: string
  /** stdout and stderr of npm and the relay under it, so far */
  output(): string
  /** resolves once the relay process (which shares npm's pipes), not only npm, is gone */
  gone: Promise<void>
}

/** The relay under npm (`npm start -- ...`, `npm exec -- apiary start ...`), as a user starts it; resolves once it listens. */
export function startUnderNpm(npmArgs: string[], opts: { detached?: boolean } = {}): Promise<NpmRelay> {
  const npm = spawn('npm', npmArgs, {
    cwd: process.cwd(),
    env: cleanEnv({ APIARY_LOG_LEVEL: 'warn' }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.detached ?? false,
  })
  let out = ''
  const collect = (d: Buffer) => {
    out += d.toString()
  }
  npm.stdout?.on('data', collect)
  npm.stderr?.on('data', collect)
  const gone = new Promise<void>((resolve) => npm.stdout?.once('close', () => resolve()))
  return new Promise((resolve, reject) => {
    npm.stdout?.on('data', () => {
      const m = /listening on (ws:\/\/\S+)/.exec(out)
      if (m) resolve({ npm, url: m[1]!, output: () => out, gone })
    })
    npm.once('exit', () => reject(new Error(`npm exited before the relay listened: ${out}`)))
  })
}
