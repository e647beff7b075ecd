import { execFile } from 'node:child_process'
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { cleanEnv } from './cli'

const run = promisify(execFile)

/**
 * The package as a user gets it: `npm pack` (dist/ is current: test/support/build.ts), the tarball installed
 * with `extraDeps` into a new host program's folder outside the repository, production dependencies only
 * (from npm's cache: CI's `npm ci` filled it). Resolves with that folder; the caller removes it.
 */
export async function installPackedPackage(extraDeps: string[] = []): Promise<string> {
  const root = process.cwd()
  const dir = mkdtempSync(join(tmpdir(), 'apiary-pack-'))
  // --ignore-scripts: `prepare` would rebuild dist/ under the feet of test files running meanwhile
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir, root], { env: cleanEnv() })
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }]
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'host-program', private: true, type: 'module' }))
  await run(
    'npm',
    ['install', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', join(dir, filename), ...extraDeps],
    {
      cwd: dir,
      env: cleanEnv(),
    },
  )
  // --ignore-scripts skipped the native builds (better-sqlite3's, and the optional verifier addon's); the ones
  // this checkout built are the same versions
  for (const pkg of ['better-sqlite3', 'bcrypto']) {
    cpSync(join(root, 'node_modules', pkg, 'build'), join(dir, 'node_modules', pkg, 'build'), { recursive: true })
  }
  return dir
}
