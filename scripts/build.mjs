// `npm run build` (and `prepare`, so `npm ci` in a clone and `npm pack` both build): tsc compiles src/ to
// dist/ with declarations; the plain-JS worker modules (and their .d.mts) are copied beside their callers,
// which load them by URL relative to their own compiled file.
import { execFileSync } from 'node:child_process'
import { cpSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const src = join(root, 'src')
const dist = join(root, 'dist')

rmSync(dist, { recursive: true, force: true })
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' })

const walk = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    return statSync(p).isDirectory() ? walk(p) : [p]
  })
for (const file of walk(src).filter((f) => f.endsWith('.mjs') || f.endsWith('.d.mts'))) {
  cpSync(file, join(dist, relative(src, file)))
}
// what test/support/build.ts compares src/ against to know whether dist/ is current
writeFileSync(join(dist, '.built'), `${new Date().toISOString()}\n`)
