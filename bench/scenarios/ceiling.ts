// `ceiling`: how many events a second the signature verifiers check on this machine with nothing else running:
// the pool as the relay runs it (the ingest ceiling the ingest targets are read against), and each verifier
// inline for comparison.
import { rowsOf } from '../lib/figures'
import { defineScenario, nothingToPrepare } from '../lib/scenario'
import { ceilingOnCorpus, type VerifyCeiling } from '../lib/verify-ceiling'

export const scenario = defineScenario({
  name: 'ceiling',
  describe: 'events/s of the signature verifiers alone, on the ingest corpus',
  needs: [],
  sides: () => ['apiary'] as const,
  prepare: nothingToPrepare,
  measure: (_side, _round, _prepared, ctx): Promise<VerifyCeiling> => ceilingOnCorpus(ctx.quick),
  report: (results) => {
    const row = rowsOf(results.apiary)
    const first = results.apiary.find((o) => o.ok)
    const backend = first?.ok ? first.value.backend : '?'
    return {
      figures: [
        row(`pool, 2 threads, as the relay runs it (${backend})`, 'ev/s', (c) => c.poolPerSec),
        row('pool, 2 threads, WASM', 'ev/s', (c) => c.wasmPoolPerSec),
        row('native addon, inline', 'ev/s', (c) => c.nativeInlinePerSec ?? Number.NaN),
        row('WASM, inline', 'ev/s', (c) => c.wasmInlinePerSec),
        row('@noble/curves, inline', 'ev/s', (c) => c.nobleInlinePerSec),
      ],
      notes: first?.ok && first.value.nativeInlinePerSec === null ? ['ceiling: the native addon did not load here'] : [],
    }
  },
})
