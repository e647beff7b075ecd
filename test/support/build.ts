// vitest globalSetup: the tests that run the `apiary` bin, pack the package or import it from plain node
// need dist/ built from the src/ being tested. Builds once per run, and only when src/ changed since.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const newest = (dir: string): number =>
  readdirSync(dir).reduce((latest, name) => {
    const p = join(dir, name)
    const s = statSync(p)
    return Math.max(latest, s.isDirectory() ? newest(p) : s.mtimeMs)
  }, 0)

export default function setup(): void {
  // for a local run of tests that never touch dist/ while src/ is mid-edit; CI never sets it
  if (process.env.APIARY_TEST_SKIP_BUILD === '1') return
  const stamp = join(process.cwd(), 'dist', '.built')
  const inputs = Math.max(newest(join(process.cwd(), 'src')), statSync('tsconfig.build.json').mtimeMs, statSync('package.json').mtimeMs)
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= inputs) return
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' })
}
