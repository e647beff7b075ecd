import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createMetrics } from '../src/infra/metrics'

/*
 * The manual stays whole: every relative link in README.md, CHANGELOG.md and docs/ reaches a file and, with an
 * #anchor, a heading there; the README stays short; nothing reads as a work log; and every metric the relay
 * registers is documented in docs/operating.md with its labels.
 */

const DOCS = ['README.md', 'CHANGELOG.md', ...readdirSync('docs').flatMap((f) => (f.endsWith('.md') ? [join('docs', f)] : []))]

/** The text outside fenced code blocks, line by line (a `#` line inside a fence is not a heading). */
function prose(text: string): string[] {
  let fenced = false
  return text.split('\n').filter((line) => {
    if (/^\s*```/.test(line)) fenced = !fenced
    return !fenced && !/^\s*```/.test(line)
  })
}

/** GitHub's anchor for a heading: rendered text, lowercased, punctuation but - and _ dropped, spaces to -. */
function slugOf(heading: string): string {
  const text = heading.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const line of prose(readFileSync(file, 'utf8'))) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!m) continue
    const slug = slugOf(m[1]!)
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    anchors.add(n === 0 ? slug : `${slug}-${n}`)
  }
  return anchors
}

/** Relative link targets in a file's prose, inline code left out. */
function relativeLinksOf(file: string): string[] {
  const text = prose(readFileSync(file, 'utf8'))
    .join('\n')
    .replace(/`[^`\n]*`/g, '')
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t))
}

/** What is wrong with one link, or undefined when it resolves. */
function brokenLink(from: string, target: string): string | undefined {
  const [path = '', anchor] = target.split('#')
  const file = path === '' ? from : normalize(join(dirname(from), path))
  if (!existsSync(file)) return `${from}: ${target} (no file ${file})`
  if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(file).has(anchor))
    return `${from}: ${target} (no heading #${anchor} in ${file})`
  return undefined
}

/**
 * Each apiary_ metric with its label names: those createMetrics() registers, and any other registration under
 * src/ (a `name: 'apiary_...'` beside its `labelNames`).
 */
function registeredMetrics(): Map<string, string[]> {
  const metrics = new Map<string, string[]>()
  const { registry } = createMetrics()
  for (const m of registry.getMetricsAsArray() as unknown as { name: string; labelNames?: string[] }[]) {
    if (m.name.startsWith('apiary_')) metrics.set(m.name, m.labelNames ?? [])
  }
  const files = readdirSync('src', { recursive: true, encoding: 'utf8' }).filter((f) => /\.(ts|mjs)$/.test(f))
  for (const f of files) {
    const source = readFileSync(join('src', f), 'utf8')
    for (const m of source.matchAll(/name: '(apiary_\w+)'/g)) {
      const rest = source.slice(m.index + m[0].length)
      const own = rest.slice(0, rest.search(/name: '|$/))
      const labels = /labelNames: \[([^\]]*)\]/.exec(own)?.[1] ?? ''
      if (!metrics.has(m[1]!))
        metrics.set(
          m[1]!,
          [...labels.matchAll(/'([^']+)'/g)].map((l) => l[1]!),
        )
    }
  }
  return metrics
}

describe('the manual', () => {
  it('finds links to check in README.md and docs/', () => {
    expect(relativeLinksOf('README.md').length).toBeGreaterThan(10)
    expect(anchorsOf('docs/architecture.md')).toContain('10-failure-behaviour-recovered-or-visible')
  })

  it('has no relative link that misses its file or its heading', () => {
    const broken = DOCS.flatMap((f) => relativeLinksOf(f).flatMap((t) => brokenLink(f, t) ?? []))
    expect(broken).toEqual([])
  })

  it('keeps README.md under 300 lines', () => {
    expect(readFileSync('README.md', 'utf8').split('\n').length).toBeLessThan(300)
  })

  it('reads as a manual, not a work log: no DESIGN §, issue numbers or sessions, and dates only beside figures', () => {
    const found = DOCS.flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) => {
          const log = /DESIGN §|\b[Ii]ssue \d+|\bSession \d/.test(line)
          const dated = /\b20\d\d-\d\d-\d\d\b/.test(line) && f !== 'docs/performance.md' && f !== 'README.md'
          return log || dated ? [`${f}:${i + 1}: ${line}`] : []
        }),
    )
    expect(found).toEqual([])
  })
})

describe('the metrics in docs/operating.md', () => {
  const doc = readFileSync('docs/operating.md', 'utf8')
  const rows = new Map([...doc.matchAll(/^\| `(apiary_\w+)` \|.*$/gm)].map((m) => [m[1]!, m[0]]))

  it('has a row, with every label, for each apiary_ metric registered in src/', () => {
    const metrics = registeredMetrics()
    expect(metrics.size).toBeGreaterThan(25)
    const missing = [...metrics].flatMap(([name, labels]) => {
      const row = rows.get(name)
      if (row === undefined) return [`${name}: no row`]
      return labels.filter((l) => !row.includes(`\`${l}\``)).map((l) => `${name}: label ${l} not named`)
    })
    expect(missing).toEqual([])
  })

  it('documents no metric the relay does not register', () => {
    const metrics = registeredMetrics()
    expect([...rows.keys()].filter((name) => !metrics.has(name))).toEqual([])
  })
})
