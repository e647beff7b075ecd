// State: the replacement pool this incarnation is starting, if any; the pool in use lives beside the actor, so
// every verify goes straight to it, never through a mailbox. Messages: GaveUp (the pool in use stopped
// replacing its workers), Started (a replacement's start, piped back). Policy: permanent, backoff 1 s → 30 s:
// a pool that gave up is a crash, and the next init starts a new one; a replacement that fails to start is one
// more crash, and past the policy's budget the actor is down and respawned by its kind supervisor (root/node/verifier).
import type { Verifier } from '../../infra/verify/verifier.js'
import { VerifierError } from '../../infra/verify/verifier.js'
import { type ActorDef, type Kernel, pipeTo, type Settled, type SupervisionPolicy, tell } from '../kernel/index.js'

export type VerifierMsg = { type: 'GaveUp'; error: VerifierError } | { type: 'Started'; attempt: object; outcome: Settled<Verifier> }

interface VerifierState {
  starting: object | undefined
}

/** Starts a pool whose workers are up; `onUnavailable` is called if it gives up after that (verifier-pool.ts). */
export type StartPool = (onUnavailable: (error: VerifierError) => void) => Promise<Verifier>

export const VERIFIER_PATH = 'node/verifier'

export const verifierPolicy = {
  mode: 'permanent',
  // a new pool starts threads and loads its Schnorr backend: a second between tries spares a broken host
  backoff: { minMs: 1_000, maxMs: 30_000, jitter: 0.2 },
} satisfies Partial<SupervisionPolicy>

/** A started pool the actor cannot take (stopped meanwhile) is offered for this long, then closed. */
const PIPE = { everyMs: 100, forMs: 10_000 } as const

/** The pool in use, which every verify reads, and the pools that gave up. */
class Pools {
  current!: Verifier
  closed = false
  /** told when the pool in use gives up */
  onGaveUp: ((error: VerifierError) => void) | undefined
  private readonly gaveUp = new WeakSet<Verifier>()

  constructor(private readonly startPool: StartPool) {}

  // a pool gives up only once its start resolved, so `started.pool` is set by then
  start(): Promise<Verifier> {
    const started: { pool?: Verifier } = {}
    const onUnavailable = (error: VerifierError) => {
      const { pool } = started
      if (pool === undefined) return
      this.gaveUp.add(pool)
      if (pool === this.current) this.onGaveUp?.(error)
    }
    return this.startPool(onUnavailable).then((pool) => {
      started.pool = pool
      return pool
    })
  }

  hasGivenUp(pool: Verifier): boolean {
    return this.gaveUp.has(pool)
  }
}

function verifierDef(pools: Pools, policy: Partial<SupervisionPolicy> = {}): ActorDef<VerifierState, VerifierMsg> {
  return {
    kind: 'verifier',
    supervisor: 'node',
    policy: { ...verifierPolicy, ...policy },
    init: (ctx) => {
      if (!pools.hasGivenUp(pools.current)) return { starting: undefined }
      const attempt = {}
      pipeTo(ctx.self, pools.start(), (outcome): VerifierMsg => ({ type: 'Started', attempt, outcome }), {
        ...PIPE,
        onGiveUp: (msg) => {
          if (msg.type === 'Started' && msg.outcome.ok) void msg.outcome.value.close()
        },
      })
      return { starting: attempt }
    },
    handle: (state, msg) => {
      if (msg.type === 'GaveUp') throw msg.error
      const { outcome } = msg
      if (msg.attempt !== state.starting || pools.closed) {
        if (outcome.ok) void outcome.value.close()
        return state
      }
      if (!outcome.ok) throw outcome.error
      if (pools.hasGivenUp(outcome.value)) {
        void outcome.value.close()
        throw new VerifierError('APIARY_VERIFIER_UNAVAILABLE', 'the new verifier pool gave up before it was used')
      }
      const old = pools.current
      pools.current = outcome.value
      void old.close()
      return { starting: undefined }
    },
  }
}

/**
 * Starts the first pool (rejecting as the pool does when it cannot), then hands its lifecycle to the verifier
 * actor: a pool that gives up is replaced after backoff instead of answering APIARY_VERIFIER_UNAVAILABLE for good.
 */
export async function openSupervisedVerifier(
  kernel: Kernel,
  startPool: StartPool,
  opts: { policy?: Partial<SupervisionPolicy> } = {},
): Promise<Verifier> {
  const pools = new Pools(startPool)
  pools.current = await pools.start()
  const ref = kernel.spawn(VERIFIER_PATH, verifierDef(pools, opts.policy))
  pools.onGaveUp = (error) => tell(ref, { type: 'GaveUp', error })
  return {
    threads: pools.current.threads,
    verify: (event) => pools.current.verify(event),
    close: async () => {
      pools.closed = true
      void kernel.stop(VERIFIER_PATH)
      await pools.current.close()
    },
  }
}
