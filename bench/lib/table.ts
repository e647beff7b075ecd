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
  strfry: Cell
  /** apiary ÷ strfry */
  strfryRatio: number | null
  target: string
  met: boolean | null
}

export function rowsOf(scenario: string, report: Report, ceilingPerSec: number | undefined): Row[] {
  return report.figures.map((f) => {
    const targets = targetsOf(scenario, f)
    const baseline = f.baseline ?? ''
    const strfry = f.strfry ?? ''
    return {
      scenario,
      group: f.group ?? '',
      figure: f.figure,
      unit: f.unit,
      apiary: f.apiary,
      baseline,
      ratio: ratioOf(f.apiary, baseline),
      strfry,
      strfryRatio: ratioOf(f.apiary, strfry),
      target: targets.map((t) => targetText(t, ceilingPerSec, f.unit)).join(', '),
      met: targets.length ? targets.every((t) => meets(t, f, ceilingPerSec)) : null,
    }
  })
}

const ratioOf = (a: Cell, b: Cell) => (typeof a === 'number' && typeof b === 'number' && b !== 0 ? Math.round((a / b) * 100) / 100 : null)
const fmt = (v: Cell) => (typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 2 }) : v)
const WIDEST = 60

export function printTable(rows: readonly Row[], rounds: number): void {
  // strfry's columns only when some scenario compared with it
  const withStrfry = rows.some((r) => r.strfry !== '')
  const times = (x: number | null) => (x === null ? '' : `${x}×`)
  const table = [
    ['scenario', 'group', 'figure', 'unit', 'Apiary', 'baseline', 'A/B', ...(withStrfry ? ['strfry', 'A/S'] : []), 'target', 'met'],
    ...rows.map((r) => [
      r.scenario,
      r.group,
      r.figure,
      r.unit,
      fmt(r.apiary),
      fmt(r.baseline),
      times(r.ratio),
      ...(withStrfry ? [fmt(r.strfry), times(r.strfryRatio)] : []),
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
