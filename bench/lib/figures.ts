// From the outcomes of a scenario's rounds to its report's figures: medians over the rounds that succeeded,
// the failure text where none did, and the notes every load generator's outcome may carry.
import type { RelayName } from './relay-types'
import type { Cell, Figure, Outcome } from './scenario'

export function median(xs: readonly number[]): number {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (v.length === 0) return Number.NaN
  const m = Math.floor(v.length / 2)
  return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2
}

export const round2 = (x: number) => Math.round(x * 100) / 100

/** The median of `get` over the successful outcomes; the first failure's text when none succeeded. */
export function cell<T>(outcomes: readonly Outcome<T>[] | undefined, get: (v: T) => number): Cell {
  if (!outcomes || outcomes.length === 0) return 'skipped'
  const ok = outcomes.flatMap((o) => (o.ok ? [o.value] : []))
  if (ok.length === 0) return `failed: ${(outcomes[0] as { error: string }).error.split('\n')[0]!.slice(0, 120)}`
  return round2(median(ok.map(get)))
}

/** CPU per unit of work, µs: `cores` busy while `perSecond` units were done. */
export const cpuPerUnitUs = (cores: number, perSecond: number) => (perSecond > 0 ? Math.round((cores * 1e7) / perSecond) / 10 : Number.NaN)

/**
 * A row builder for one group: Apiary's outcomes, and the baseline's where the group compares (another relay,
 * or another variant of the same run).
 */
export function rowsOf<T>(apiary: readonly Outcome<T>[] | undefined, baseline?: readonly Outcome<T>[], group?: string) {
  return (figure: string, unit: string, get: (v: T) => number): Figure => ({
    ...(group ? { group } : {}),
    figure,
    unit,
    apiary: cell(apiary, get),
    ...(baseline ? { baseline: cell(baseline, get) } : {}),
  })
}

/** A row builder for a group that compares the relays: Apiary, the baseline, and strfry (skipped where it did not run). */
export function relayRowsOf<T>(results: Partial<Record<RelayName, readonly Outcome<T>[]>>, group?: string) {
  const row = rowsOf(results.apiary, results.baseline, group)
  return (figure: string, unit: string, get: (v: T) => number): Figure => ({ ...row(figure, unit, get), strfry: cell(results.strfry, get) })
}

/** Outcomes a load generator counts apart: refusals by reason prefix, and a run that ended early. */
export interface CountedOutcome {
  rejected?: Record<string, number>
  incomplete?: string
}

/** One note per round whose load saw refusals or ended early. */
export function outcomeNotes(label: string, outcomes: readonly Outcome<CountedOutcome>[] | undefined): string[] {
  const notes: string[] = []
  outcomes?.forEach((o, i) => {
    if (!o.ok) return
    const refused = Object.entries(o.value.rejected ?? {})
    if (refused.length) notes.push(`${label} r${i + 1}: not accepted ${refused.map(([k, n]) => `${k}=${n}`).join(' ')}`)
    if (o.value.incomplete) notes.push(`${label} r${i + 1}: incomplete (${o.value.incomplete})`)
  })
  return notes
}

/** The values of one field of a set of outcomes (each side's), as a map of partial outcomes. */
export function pick<T, K extends keyof T>(outcomes: readonly Outcome<T>[] | undefined, key: K): Outcome<T[K]>[] {
  return (outcomes ?? []).map((o) => (o.ok ? { ok: true, value: o.value[key] } : o))
}
