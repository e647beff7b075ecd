// The runner's output: each scenario's figures as rows with the ratio of the two columns and their targets
// (bench/targets.ts), printed as one aligned table.
import { meets, targetsOf, targetText } from '../targets'
import type { Cell, Report } from './scenario'

export interface Row {
  scenario: string
  group: string
  figure: string
  unit: string
  apiary: Cell
  baseline: Cell
  /** apiary ÷ baseline */
  ratio: number | null
  target: string
  met: boolean | null
}

export function rowsOf(scenario: string, report: Report, ceilingPerSec: number | undefined): Row[] {
  return report.figures.map((f) => {
    const targets = targetsOf(scenario, f)
    const baseline = f.baseline ?? ''
    const both = typeof f.apiary === 'number' && typeof baseline === 'number' && baseline !== 0
    return {
      scenario,
      group: f.group ?? '',
      figure: f.figure,
      unit: f.unit,
      apiary: f.apiary,
      baseline,
      ratio: both ? Math.round(((f.apiary as number) / (baseline as number)) * 100) / 100 : null,
      target: targets.map((t) => targetText(t, ceilingPerSec, f.unit)).join(', '),
      met: targets.length ? targets.every((t) => meets(t, f, ceilingPerSec)) : null,
    }
  })
}

const fmt = (v: Cell) => (typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 2 }) : v)
const WIDEST = 60

export function printTable(rows: readonly Row[], rounds: number): void {
  const table = [
    ['scenario', 'group', 'figure', 'unit', 'Apiary', 'baseline', 'A/B', 'target', 'met'],
    ...rows.map((r) => [
      r.scenario,
      r.group,
      r.figure,
      r.unit,
      fmt(r.apiary),
      fmt(r.baseline),
      r.ratio === null ? '' : `${r.ratio}×`,
      r.target,
      r.met === null ? '' : r.met ? 'met' : 'NOT MET',
    ]),
  ]
  const widths = table[0]!.map((_, c) => Math.min(WIDEST, Math.max(...table.map((row) => String(row[c]).length))))
  console.log(`\nmedians over ${rounds} round(s)`)
  for (const [i, row] of table.entries()) {
    console.log(
      row
        .map((v, c) => String(v).slice(0, WIDEST).padEnd(widths[c]!))
        .join('  ')
        .trimEnd(),
    )
    if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  }
}
