// `npm run bench`: every scenario of bench/scenario-list.ts (or those named by --only), each side of a
// comparison in turn, the order alternating round by round because this machine is noisy; then the medians,
// the targets of bench/targets.ts, and the notes. bench/README.md says how to run and read it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { dirname, join } from 'node:path'
import { builtPackageMissing } from './built-package'
import { dropBenchDatabases } from './lib/cluster-backends'
import { unavailable } from './lib/needs'
import type { AnyScenario, Context, Outcome, Results } from './lib/scenario'
import { strfryMissing, strfryVersion } from './lib/strfry-relay'
import { printTable, type Row, rowsOf } from './lib/table'
import { ceilingOnCorpus } from './lib/verify-ceiling'
import { SCENARIOS } from './scenario-list'

const argv = process.argv.slice(2)
const option = (name: string) => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 ? argv[i + 1] : undefined
}
const quick = argv.includes('--quick')
const rounds = Number(option('rounds') ?? 3)
const only = option('only')?.split(',')
const relays = option('relays')?.split(',')
const jsonFile = option('json')
for (const name of only ?? [])
  if (!SCENARIOS.some((s) => s.name === name))
    throw new Error(`unknown scenario ${name}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`)
const chosen = SCENARIOS.filter((s) => !only || only.includes(s.name))

const log = (s: string) => process.stderr.write(`${s}\n`)
const tmpRoot = mkdtempSync(join(os.tmpdir(), `apiary-bench-`))
process.on('exit', () => rmSync(tmpRoot, { recursive: true, force: true }))
// an interrupted run still drops the databases it made (its children get the same signal from the terminal)
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void dropBenchDatabases().finally(() => process.exit(130)))

const ctx: Context = { quick, rounds, freshDir: (label) => mkdtempSync(join(tmpRoot, `${label}-`)), option, log }

async function attempt<T>(fn: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await fn() }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) }
  }
}

/** Each round runs every side once, A,B then B,A; a failed run is one failed outcome, not the end. */
async function runRounds(s: AnyScenario, prepared: unknown): Promise<Results<string, unknown>> {
  const sides = s.sides(ctx).filter((side) => !relays || !['apiary', 'baseline', 'strfry'].includes(side) || relays.includes(side))
  const results: Results<string, unknown> = Object.fromEntries(sides.map((side) => [side, []]))
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      log(`  ${s.name}: ${side}, round ${round + 1}/${rounds}`)
      const r = await attempt(() => s.measure(side, round, prepared, ctx))
      if (!r.ok) log(`    failed: ${r.error}`)
      results[side]!.push(r)
    }
  }
  return results
}

const machine = {
  cpu: os.cpus()[0]?.model ?? 'unknown',
  cores: os.cpus().length,
  memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100),
  node: process.version,
  date: new Date().toISOString(),
  mode: quick ? 'quick' : 'full',
  rounds,
  strfry: strfryMissing() ?? strfryVersion(),
}
console.log(
  `machine: ${machine.cpu} × ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}, load ${machine.loadavg.join(' ')}`,
)
console.log(`strfry: ${machine.strfry}`)
console.log(`${machine.date}, ${machine.mode} mode, ${rounds} round(s), scenarios: ${chosen.map((s) => s.name).join(', ')}`)
const missingPackage = builtPackageMissing()
if (missingPackage) throw new Error(missingPackage)

const rows: Row[] = []
const notes: string[] = []
const raw: Record<string, unknown> = {}
if (chosen.some((s) => s.needs.includes('ceiling'))) {
  log('ceiling: the verifier pool alone, on the corpus')
  const c = await attempt(() => ceilingOnCorpus(quick))
  if (c.ok) ctx.ceiling = c.value
  else notes.push(`verifier ceiling not measured: ${c.error}`)
}
for (const s of chosen) {
  const missing = await unavailable(s.needs, ctx)
  if (missing) {
    log(`${s.name}: skipped (${missing})`)
    notes.push(`${s.name} skipped: ${missing}`)
    continue
  }
  log(`${s.name}: ${s.describe}`)
  const prepared = await attempt(() => s.prepare(ctx))
  if (!prepared.ok) {
    notes.push(`${s.name} failed in its set-up: ${prepared.error}`)
    continue
  }
  const results = await runRounds(s, prepared.value)
  const report = s.report(results, prepared.value, ctx)
  rows.push(...rowsOf(s.name, report, ctx.ceiling?.poolPerSec))
  notes.push(...report.notes)
  raw[s.name] = results
}
await dropBenchDatabases()
if (strfryMissing() && rows.some((r) => r.strfry !== '')) notes.push(`strfry rows skipped: ${strfryMissing()}`)

printTable(rows, rounds)
if (notes.length) console.log(`\nnotes:\n${notes.map((n) => `  ${n}`).join('\n')}`)
if (jsonFile) {
  mkdirSync(dirname(jsonFile), { recursive: true })
  writeFileSync(jsonFile, JSON.stringify({ machine, ceiling: ctx.ceiling, rows, notes, raw }, null, 2))
  console.log(`\nwritten: ${jsonFile}`)
}
