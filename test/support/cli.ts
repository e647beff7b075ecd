import { execFile } from 'node:child_process'
import { join } from 'node:path'

export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/** The package's bin, as a user runs it (compiled dist/, built by test/support/build.ts). */
export const APIARY_BIN = join(process.cwd(), 'bin', 'apiary.js')

/** Environment without APIARY_* settings of the test run leaking in. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => !k.startsWith('APIARY_') && v !== undefined)) as Record<
    string,
    string
  >
  return { ...env, ...extra }
}

/** `apiary ...args`; resolves with the exit code, never rejects on it. */
export function apiary(args: string[], opts: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [APIARY_BIN, ...args],
      { env: opts.env ?? cleanEnv(), timeout: opts.timeoutMs ?? 30_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
        resolve({ code, stdout, stderr })
      },
    )
  })
}
