import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
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

/** The files under src/ that `f` imports (relative specs only): `.js` names its `.ts` source, `.mjs` itself. */
function localImportsOf(f: string): string[] {
  return importsOf(codeOnly(readFileSync(f, 'utf8')))
    .filter((s) => s.startsWith('.'))
    .map((s) => {
      const p = join(dirname(f), s)
      const candidates = [p.replace(/\.js$/, '.ts'), p, `${p}.ts`, join(p, 'index.ts')]
      return candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? p
    })
}

/** `from` files whose imports reach into `into` (a path prefix), as "file imports target" lines. */
const importsInto = (from: string[], into: string) =>
  from.flatMap((f) =>
    localImportsOf(f)
      .filter((t) => t.startsWith(into))
      .map((t) => `${f} imports ${t}`),
  )

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

  it('keeps Redis key names out of the HTTP layer: src/infra/http imports nothing from src/infra/redis', () => {
    expect(importsInto(sourceFiles('src/infra/http'), 'src/infra/redis/')).toEqual([])
  })

  it('keeps config below the HTTP layer: src/infra/config.ts imports nothing from src/infra/http', () => {
    expect(importsInto(['src/infra/config.ts'], 'src/infra/http/')).toEqual([])
  })

  it('lets actors name keys and channels only through a port: src/actors imports nothing from src/infra/redis', () => {
    expect(importsInto(sourceFiles('src/actors'), 'src/infra/redis/')).toEqual([])
  })

  it('keeps the one-node backends free of Redis names: memory gates and the local bus import nothing from src/infra/redis', () => {
    const oneNode = [
      ...sourceFiles('src/infra/gates').filter((f) => /\/(memory-[^/]*|connection-slots)\.ts$/.test(f)),
      'src/infra/bus/local-bus.ts',
    ]
    expect(oneNode.length).toBeGreaterThan(4)
    expect(importsInto(oneNode, 'src/infra/redis/')).toEqual([])
  })

  it('lets only principal actors spend a rate-limit budget: nothing else under src/ calls admit on a limiter', () => {
    // architecture §8: every budget has its principal actor (coalescing, per-limit failure semantics)
    const callsLimiter = /(?:limiter|Limiter|fallback|Fallback)\)?\s*\??\.admit(?:Many)?\b/
    expect(callsLimiter.test('d.limiter\n      .admit(key, rule)')).toBe(true)
    const offences = sourceFiles('src')
      .filter((f) => !f.startsWith('src/actors/principal/') && !f.startsWith('src/infra/gates/'))
      .filter((f) => callsLimiter.test(codeOnly(readFileSync(f, 'utf8'))))
    expect(offences).toEqual([])
  })

  it('has no import cycle between files under src/, type-only and dynamic imports included', () => {
    expect(importCycles(sourceFiles('src')).map(describeCycle)).toEqual([])
  })

  it('finds every cycle of a graph it is shown and reads type-only and dynamic imports (the detector itself works)', () => {
    expect(importsOf("import type { A } from './a.js'\nexport type { B } from './b.js'\nconst c = await import('./c.js')")).toEqual([
      './a.js',
      './b.js',
      './c.js',
    ])
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts', 'd.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
    ])
    expect(cyclesOf(graph).map(describeCycle)).toEqual(['a.ts -> b.ts -> c.ts -> a.ts', 'e.ts -> e.ts'])
  })
})

interface Cycle {
  /** a path that returns to its start */
  path: string[]
  /** every file of its strongly connected component: those that would need to change to break it */
  files: string[]
}

const describeCycle = (c: Cycle) =>
  c.path.join(' -> ') + (c.files.length > c.path.length - 1 ? ` (one of the cycles among ${c.files.join(', ')})` : '')

function importCycles(files: string[]): Cycle[] {
  return cyclesOf(new Map(files.map((f) => [f, localImportsOf(f)])))
}

/** One cycle per strongly connected component (Tarjan). */
function cyclesOf(graph: Map<string, string[]>): Cycle[] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  const visit = (v: string) => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || graph.get(v)?.includes(v)) components.push(component)
  }
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v)
  return components
    .map((c) => ({ path: cycleThrough(graph, new Set(c)), files: c.sort() }))
    .sort((a, b) => a.path[0]!.localeCompare(b.path[0]!))
}

/** A shortest path from the component's first file (by name) back to itself, through the component only. */
function cycleThrough(graph: Map<string, string[]>, component: Set<string>): string[] {
  const start = [...component].sort()[0]!
  const cameFrom = new Map<string, string>()
  const queue = [start]
  while (queue.length > 0) {
    const v = queue.shift()!
    for (const w of graph.get(v) ?? []) {
      if (!component.has(w)) continue
      if (w === start) {
        const between: string[] = []
        for (let at = v; at !== start; at = cameFrom.get(at)!) between.unshift(at)
        return [start, ...between, start]
      }
      if (!cameFrom.has(w)) {
        cameFrom.set(w, v)
        queue.push(w)
      }
    }
  }
  return [start, start]
}
