// `npm run build` (and `prepare`, so `npm ci` in a clone and `npm pack` both build): tsc compiles src/ to
// dist/ with declarations; the plain-JS worker modules (and their .d.mts) are copied beside their callers,
// which load them by URL relative to their own compiled file, and the console's ui/ folder beside its server. The build goes to a fresh folder that replaces
// dist/ only once it is complete: a failed build leaves the previous dist/ as it was.
import { execFileSync } from 'node:child_process'
import { cpSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const src = join(root, 'src')
const dist = join(root, 'dist')
const next = join(root, `.dist-${process.pid}`)

rmSync(next, { recursive: true, force: true })
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', next], { stdio: 'inherit' })
} catch {
  rmSync(next, { recursive: true, force: true })
  process.stderr.write('build: tsc failed; dist/ left as it was\n')
  process.exit(1)
}

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    return statSync(p).isDirectory() ? walk(p) : [p]
  })
for (const file of walk(src).filter((f) => f.endsWith('.mjs') || f.endsWith('.d.mts'))) {
  cpSync(file, join(next, relative(src, file)))
}
// the console's page, scripts and styles ship in the package: the relay serves them, nothing comes from a CDN
const ui = join('infra', 'http', 'console', 'ui')
cpSync(join(src, ui), join(next, ui), { recursive: true })
// what test/support/build.ts compares src/ against to know whether dist/ is current
writeFileSync(join(next, '.built'), `${new Date().toISOString()}\n`)
rmSync(dist, { recursive: true, force: true })
renameSync(next, dist)
