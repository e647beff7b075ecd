import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'

/** docs/architecture.md §2: imports flow one way, protocols stay pure, and only the kernel touches nact. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) return sourceFiles(p)
    return /\.(ts|mts|mjs)$/.test(name) ? [p] : []
  })
}

const importsOf = (text: string) =>
  [
    ...text.matchAll(/(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s+['"]([^'"]+)['"]/gm),
  ].map((m) => m[1] ?? m[2] ?? m[3] ?? '')

const codeOnly = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')

describe('architecture', () => {
  it('keeps src/protocols pure: no I/O modules, no infra or actors, no clock, env or randomness', () => {
    const offences: string[] = []
    for (const f of sourceFiles('src/protocols')) {
      const text = codeOnly(readFileSync(f, 'utf8'))
      for (const spec of importsOf(text)) {
        if (
          /^(node:|ws$|ioredis|nact|better-sqlite3|pino|prom-client|rxjs)/.test(spec) ||
          /\.\.\/(infra|actors)|\/infra\/|\/actors\//.test(spec)
        )
          offences.push(`${f} imports ${spec}`)
      }
      for (const banned of ['Date.now', 'new Date(', 'process.env', 'Math.random', 'performance.now'])
        if (text.includes(banned)) offences.push(`${f} uses ${banned}`)
    }
    expect(offences).toEqual([])
  })

  it('lets infra depend on protocols only, never on actors or the composition root', () => {
    const offences = sourceFiles('src/infra').flatMap((f) =>
      importsOf(readFileSync(f, 'utf8'))
        .filter((s) => /\/actors\/|\.\.\/relay\/|\.\.\/cli\//.test(s))
        .map((s) => `${f} imports ${s}`),
    )
    expect(offences).toEqual([])
  })

  it('calls nact only from the kernel', () => {
    const offences = sourceFiles('src')
      .filter((f) => !f.startsWith('src/actors/kernel/'))
      .filter((f) => {
        const text = readFileSync(f, 'utf8')
        return importsOf(text).includes('nact') || /require\(['"]nact['"]\)/.test(text)
      })
    expect(offences).toEqual([])
  })

  it('reads process.env only where config is loaded', () => {
    const offences = sourceFiles('src')
      .filter((f) => codeOnly(readFileSync(f, 'utf8')).includes('process.env'))
      .filter((f) => !['src/cli/main.ts', 'src/infra/config.ts'].includes(f))
    expect(offences).toEqual([])
  })

  it('keeps src/client to the wire: it imports only src/protocols among our modules', () => {
    const offences = sourceFiles('src/client').flatMap((f) =>
      importsOf(readFileSync(f, 'utf8'))
        .filter((s) => s.startsWith('.') && !/^src\/(client|protocols)\//.test(join(dirname(f), s)))
        .map((s) => `${f} imports ${s}`),
    )
    expect(offences).toEqual([])
  })

  it('lets nothing but the CLI import src/cli, and nothing but the CLI and the package entry import src/relay', () => {
    const offences = sourceFiles('src').flatMap((f) =>
      importsOf(readFileSync(f, 'utf8'))
        .filter(
          (s) => (/\/cli\//.test(s) && !f.startsWith('src/cli/')) || (/\/relay\//.test(s) && !/^src\/(cli\/|relay\/|index\.ts$)/.test(f)),
        )
        .map((s) => `${f} imports ${s}`),
    )
    expect(offences).toEqual([])
  })

  it('holds only the package entry at the root of src/: everything else lives in its layer', () => {
    const loose = readdirSync('src').filter((name) => statSync(join('src', name)).isFile())
    expect(loose).toEqual(['index.ts'])
  })
})
