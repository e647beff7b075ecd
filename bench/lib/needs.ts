// Whether what a scenario needs is here: Redis and PostgreSQL answering, the baseline relay's packages
// installed, the verifier ceiling measured. Each is asked once per run.
import { createRequire } from 'node:module'
import { postgresUnavailable, redisUnavailable } from './cluster-backends'
import type { Context, Need } from './scenario'

const asked = new Map<Need, Promise<string | undefined>>()

function baselineRelayMissing(): Promise<string | undefined> {
  const require = createRequire(import.meta.url)
  for (const pkg of ['@nostr-relay/core', '@nostr-relay/event-repository-sqlite']) {
    try {
      require.resolve(pkg)
    } catch {
      return Promise.resolve(`the baseline relay's package ${pkg} is not installed`)
    }
  }
  return Promise.resolve(undefined)
}

function check(need: Need, ctx: Context): Promise<string | undefined> {
  switch (need) {
    case 'redis':
      return redisUnavailable()
    case 'postgres':
      return postgresUnavailable()
    case 'baseline relay':
      return baselineRelayMissing()
    case 'ceiling':
      return Promise.resolve(ctx.ceiling ? undefined : 'the verifier ceiling could not be measured')
  }
}

/** Why one of `needs` is missing, or undefined when all are here. */
export async function unavailable(needs: readonly Need[], ctx: Context): Promise<string | undefined> {
  for (const need of needs) {
    if (!asked.has(need)) asked.set(need, check(need, ctx))
    const why = await asked.get(need)
    if (why) return why
  }
  return undefined
}
