// `admission`: admission decisions per second against Redis through the relay's own gate (the GCRA Lua script
// on one ioredis connection set up as a node's), one principal per caller and the rule wide open so every
// decision takes the script's write path: C callers awaiting one decision per round trip, C callers sending
// batches of B in one pipeline (what a principal actor does when B admits queue behind one in flight), and
// the embedded limiter, the ceiling with no network. Rounds reverse the line order.
import { type AdmissionCell, admissionBench } from '../lib/admission-load'
import { cpuPerUnitUs, rowsOf } from '../lib/figures'
import type { Figure } from '../lib/scenario'
import { type Context, defineScenario, nothingToPrepare } from '../lib/scenario'

const optionsOf = (ctx: Context) => ({
  seconds: ctx.quick ? 1 : 3,
  maxDecisions: ctx.quick ? 2_000_000 : 10_000_000,
  callers: [1, 16, 64],
  batches: [8, 32, 128],
  batchCallers: [1, 16],
  memoryCallers: 16,
})

export const scenario = defineScenario({
  name: 'admission',
  describe: 'admission decisions/s through the Redis gate (one connection) and the embedded limiter',
  needs: ['redis'],
  sides: () => ['apiary'] as const,
  prepare: nothingToPrepare,
  measure: (_side, round, _prepared, ctx): Promise<AdmissionCell[]> => admissionBench({ ...optionsOf(ctx), reverse: round % 2 === 1 }),
  report: (results, _prepared, ctx) => {
    const first = results.apiary.find((o) => o.ok)
    const labels = first?.ok ? first.value.map((c) => c.label) : []
    const figures: Figure[] = labels.flatMap((label) => {
      const row = rowsOf(results.apiary, undefined, label)
      const of = (f: (c: AdmissionCell) => number) => (cells: AdmissionCell[]) => f(cells.find((c) => c.label === label)!)
      const redis = label.startsWith('redis')
      return [
        row(
          'decisions',
          '/s',
          of((c) => c.decisionsPerSec),
        ),
        row(
          'client CPU per decision',
          'µs',
          of((c) => cpuPerUnitUs(c.loadGenCores, c.decisionsPerSec)),
        ),
        ...(redis
          ? [
              row(
                'redis-server CPU per decision',
                'µs',
                of((c) => cpuPerUnitUs(c.redisCores, c.decisionsPerSec)),
              ),
              row(
                'call p50',
                'ms',
                of((c) => c.callLatency.p50Ms),
              ),
              row(
                'call p99',
                'ms',
                of((c) => c.callLatency.p99Ms),
              ),
            ]
          : []),
      ]
    })
    const notes = [
      `admission: ${optionsOf(ctx).seconds} s per line; "×C" = C concurrent callers on one connection, admitMany/B = B decisions per call`,
    ]
    results.apiary.forEach((o, i) => {
      if (o.ok)
        for (const c of o.value)
          if (c.failed || c.refused) notes.push(`admission r${i + 1} ${c.label}: ${c.failed} calls failed, ${c.refused} refused`)
    })
    if (!first) figures.push(rowsOf(results.apiary)('decisions', '/s', () => Number.NaN))
    return { figures, notes }
  },
})
