// Starts test/support/agent-child.mjs: a real AgentClient in its own process, which a test freezes (SIGSTOP),
// kills (SIGKILL) or asks to leave (SIGTERM: goodbye), as happens to agents on an operator's machines.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { bytesToHex } from '@noble/hashes/utils.js'
import { makeKeys } from './events'

const SCRIPT = fileURLToPath(new URL('./agent-child.mjs', import.meta.url))

export interface AgentProcess {
  proc: ChildProcess
  pubkey: string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  signal(sig: NodeJS.Signals): void
}

export interface AgentProcessOptions {
  heartbeatSeconds: number
  leaseSeconds: number
  capability: string
}

/** Resolves once the agent registered (its first heartbeat and announcement went out). */
export function startAgentProcess(url: string, o: AgentProcessOptions): Promise<AgentProcess> {
  const secretHex = bytesToHex(makeKeys().secretKey)
  const proc = spawn(process.execPath, [SCRIPT, url, secretHex, String(o.heartbeatSeconds), String(o.leaseSeconds), o.capability], {
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
      const m = /started ([0-9a-f]{64})/.exec(out)
      if (m) resolve({ proc, pubkey: m[1]!, exited, signal: (sig) => proc.kill(sig) })
    })
    void exited.then(({ code, signal }) =>
      reject(new Error(`agent process exited (${code ?? signal}) before it started: ${err.slice(-500)}`)),
    )
  })
}

/** SIGCONT then SIGKILL: ends an agent whatever state a test left it in. */
export async function endAgentProcess(a: AgentProcess): Promise<void> {
  if (a.proc.exitCode !== null || a.proc.signalCode !== null) return
  a.proc.kill('SIGCONT')
  a.proc.kill('SIGKILL')
  await a.exited
}
