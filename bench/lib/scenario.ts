// What a scenario is to the runner (bench/run.ts): a name for `--only`, what it needs, the sides it compares
// (relays or variants, alternated round by round), one measurement of one side, and a report of figures.
import type { VerifyCeiling } from './verify-ceiling'

/** What a scenario cannot run without; the runner skips it with a note when one is missing. */
export type Need = 'redis' | 'postgres' | 'baseline relay' | 'ceiling'

export interface Context {
  quick: boolean
  rounds: number
  /** a fresh directory under this run's temporary root */
  freshDir(label: string): string
  /** the verifier pool's events/s on this machine, for scenarios that need 'ceiling' */
  ceiling?: VerifyCeiling
  /** a scenario's own command-line option (`--agent-shards 3`) */
  option(name: string): string | undefined
  log(line: string): void
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: string }
export type Results<S extends string, T> = Record<S, Outcome<T>[]>

/** a text cell is 'failed: …' or 'skipped' */
export type Cell = number | string

/** One row: a named figure with its unit, for Apiary and (where the scenario compares) the baseline. */
export interface Figure {
  /** a sub-heading inside the scenario (a load shape, a variant); targets may name it */
  group?: string
  figure: string
  unit: string
  apiary: Cell
  baseline?: Cell
  /** strfry's figure, where the group compares the relays ('skipped' without STRFRY_BIN) */
  strfry?: Cell
}

export interface Report {
  figures: Figure[]
  notes: string[]
}

export interface Scenario<S extends string, T, P> {
  name: string
  /** one line: what it measures */
  describe: string
  needs: readonly Need[]
  /** the compared sides, in the first round's order ('apiary' and 'baseline', or variants) */
  sides: (ctx: Context) => readonly S[]
  /** untimed set-up before any side runs: fixtures, pre-loaded data */
  prepare: (ctx: Context) => Promise<P>
  measure: (side: S, round: number, prepared: P, ctx: Context) => Promise<T>
  report: (results: Results<S, T>, prepared: P, ctx: Context) => Report
}

/** a scenario with its types erased, as the runner holds it */
export interface AnyScenario {
  name: string
  describe: string
  needs: readonly Need[]
  sides: (ctx: Context) => readonly string[]
  prepare: (ctx: Context) => Promise<unknown>
  measure: (side: string, round: number, prepared: unknown, ctx: Context) => Promise<unknown>
  report: (results: Results<string, unknown>, prepared: unknown, ctx: Context) => Report
}

export const defineScenario = <S extends string, T, P>(s: Scenario<S, T, P>): AnyScenario => s as unknown as AnyScenario

/** For scenarios without set-up. */
export const nothingToPrepare = async (): Promise<undefined> => undefined
