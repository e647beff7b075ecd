// A working fake of the RateLimiter port for principal tests: the real memory limiter behind it, counting the
// backend calls that reach it, and able to fail like a Redis that went away (never vi.mock).
import { createMemoryRateLimiter } from '../../../src/infra/gates/memory-rate-limit'
import { GateError, type RateLimiter } from '../../../src/infra/gates/rate-limit'

/** `failAfterCalls`: how many backend calls (admit or admitMany) answer before every later one throws GateError. */
export function countingLimiter(opts: { failing?: boolean; failAfterCalls?: number } = {}) {
  const inner = createMemoryRateLimiter({ now: () => 0 })
  const calls = { admit: 0, admitMany: 0 }
  const failAfter = opts.failing ? 0 : (opts.failAfterCalls ?? Number.POSITIVE_INFINITY)
  const down = () => calls.admit + calls.admitMany > failAfter
  const limiter: RateLimiter = {
    keyOf: (budget) => inner.keyOf(budget),
    admit: (key, rule, cost) => {
      calls.admit++
      return down() ? Promise.reject(new GateError('down')) : inner.admit(key, rule, cost)
    },
    admitMany: async (requests) => {
      calls.admitMany++
      if (down()) throw new GateError('down')
      const out = []
      for (const r of requests) out.push(await inner.admit(r.key, r.rule, r.cost))
      return out
    },
    close: () => inner.close(),
  }
  return { limiter, calls }
}
