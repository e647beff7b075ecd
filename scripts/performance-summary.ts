// The README's performance table comes from docs/performance.md's `## Summary` section (one lead paragraph, one
// table), so the two never disagree: `npm run docs` copies it, test/docs/performance-summary.test.ts checks it.
import { posix } from 'node:path'

/** The README block that holds the copy (scripts/readme-blocks.ts) */
export const PERFORMANCE_SUMMARY_BLOCK = 'performance-summary'

const SOURCE = 'docs/performance.md'
const HEADING = '## Summary'

/** The lines of the `## Summary` section, up to the next heading of the same or a higher level. */
function summaryLines(performanceMd: string): string[] {
  const lines = performanceMd.split('\n')
  const at = lines.findIndex((l) => l.trimEnd() === HEADING)
  if (at < 0) throw new Error(`${SOURCE} has no "${HEADING}" section: the README's performance table is copied from it`)
  const next = lines.findIndex((l, i) => i > at && /^#{1,2} /.test(l))
  return lines.slice(at + 1, next < 0 ? lines.length : next)
}

/** Blank-line separated blocks, each as its lines. */
function blocksOf(lines: string[]): string[][] {
  const blocks: string[][] = [[]]
  for (const line of lines) {
    if (line.trim() === '') blocks.push([])
    else blocks.at(-1)!.push(line)
  }
  return blocks.filter((b) => b.length > 0)
}

const isTableRow = (line: string) => line.trimStart().startsWith('|')
const isTable = (block: string[]) => block.length >= 3 && block.every(isTableRow) && /^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$/.test(block[1]!)

/** A link relative to docs/ made relative to the repository root, where README.md is. */
function rebaseLinks(text: string): string {
  return text.replace(/\]\(([^)\s]+)\)/g, (whole, target: string) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('/')) return whole
    const path = target.startsWith('#') ? `performance.md${target}` : target
    return `](${posix.normalize(posix.join('docs', path))})`
  })
}

/**
 * The README's performance block: the lead paragraph and the table of docs/performance.md's Summary section,
 * their links rebased from docs/ to the root. Throws, naming what is missing, unless the section holds exactly
 * one paragraph followed by one table.
 */
export function readmePerformanceSummary(performanceMd: string): string {
  const blocks = blocksOf(summaryLines(performanceMd))
  const where = `the "${HEADING}" section of ${SOURCE}`
  const table = blocks.find(isTable)
  if (table === undefined) throw new Error(`${where} has no table (a header row, a |---| row and at least one row)`)
  const [lead, second, ...rest] = blocks
  if (lead === table || lead!.some(isTableRow)) throw new Error(`${where} has no lead paragraph before its table`)
  if (second !== table || rest.length > 0)
    throw new Error(`${where} must hold exactly one lead paragraph and one table, and holds ${blocks.length} blocks`)
  return rebaseLinks([...lead!, '', ...table].join('\n'))
}
