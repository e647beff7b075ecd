import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { PERFORMANCE_SUMMARY_BLOCK, readmePerformanceSummary } from '../../scripts/performance-summary'
import { markedBlock, withMarkedBlock } from '../../scripts/readme-blocks'

/*
 * The README's performance table is docs/performance.md's Summary section, copied by `npm run docs`: a hand edit
 * of either side alone fails here.
 */

const LEAD = 'Measured on a test machine with `npm run bench`:'
const TABLE = ['| scenario | Apiary |', '|---|---|', '| ingest | 1 event/s |']
const doc = (summary: string[]) => ['# Performance', '', 'Intro.', '', ...summary, '', '## Method', '', '- rounds'].join('\n')

describe("the README's performance summary", () => {
  it('is the Summary section of docs/performance.md (run `npm run docs` after changing it)', () => {
    const readme = readFileSync('README.md', 'utf8')
    expect(markedBlock(readme, PERFORMANCE_SUMMARY_BLOCK)).toBe(readmePerformanceSummary(readFileSync('docs/performance.md', 'utf8')))
  })

  it('holds a lead paragraph and a table, followed in the README by the link to docs/performance.md', () => {
    const block = readmePerformanceSummary(readFileSync('docs/performance.md', 'utf8'))
    expect(block.split('\n\n')).toHaveLength(2)
    expect(block.split('\n\n')[1]).toMatch(/^\| scenario \|/)
    const readme = readFileSync('README.md', 'utf8')
    const after = readme.slice(readme.indexOf(`<!-- ${PERFORMANCE_SUMMARY_BLOCK}:end -->`))
    expect(after.split('\n').slice(1, 4).join('\n')).toContain('[docs/performance.md](docs/performance.md)')
  })

  it('copies the paragraph and the table only, up to the next section', () => {
    expect(readmePerformanceSummary(doc(['## Summary', '', LEAD, '', ...TABLE]))).toBe([LEAD, '', ...TABLE].join('\n'))
  })

  it('rebases links from docs/ to the root of the repository', () => {
    const lead =
      'See [the method](#method), [cluster](cluster.md), [bench](../bench/README.md) and [strfry](https://github.com/hoytech/strfry).'
    expect(readmePerformanceSummary(doc(['## Summary', '', lead, '', ...TABLE])).split('\n')[0]).toBe(
      'See [the method](docs/performance.md#method), [cluster](docs/cluster.md), [bench](bench/README.md) and [strfry](https://github.com/hoytech/strfry).',
    )
  })

  it('throws, naming the section, when docs/performance.md has no Summary section', () => {
    expect(() => readmePerformanceSummary(doc(['## Results', '', LEAD, '', ...TABLE]))).toThrow(
      'docs/performance.md has no "## Summary" section',
    )
  })

  it('throws when the Summary section has no table', () => {
    expect(() => readmePerformanceSummary(doc(['## Summary', '', LEAD]))).toThrow(
      /"## Summary" section of docs\/performance.md has no table/,
    )
    // a header without its |---| row is no table
    expect(() => readmePerformanceSummary(doc(['## Summary', '', LEAD, '', TABLE[0]!, TABLE[2]!]))).toThrow(/has no table/)
  })

  it('throws when the table has no lead paragraph, or the section holds more than the two', () => {
    expect(() => readmePerformanceSummary(doc(['## Summary', '', ...TABLE]))).toThrow(/has no lead paragraph/)
    expect(() => readmePerformanceSummary(doc(['## Summary', '', LEAD, '', ...TABLE, '', 'A note after.']))).toThrow(
      /exactly one lead paragraph and one table, and holds 3 blocks/,
    )
  })

  it('replaces only what lies between the markers, and refuses a README without them', () => {
    const readme = '# R\n\n<!-- x:start -->\nold\n<!-- x:end -->\n\nafter\n'
    expect(withMarkedBlock(readme, 'x', 'new\ntable')).toBe('# R\n\n<!-- x:start -->\nnew\ntable\n<!-- x:end -->\n\nafter\n')
    expect(markedBlock(withMarkedBlock(readme, 'x', 'new'), 'x')).toBe('new')
    expect(() => withMarkedBlock('# R\n', 'x', 'new')).toThrow('README.md has no <!-- x:start --> … <!-- x:end --> markers')
  })
})
