import type { ActorDef, SupervisionPolicy } from '../../../src/actors/kernel'

export type ProbeMsg =
  | { type: 'Push'; n: number }
  | { type: 'Boom' }
  | { type: 'Reject' }
  | { type: 'Hold'; until: Promise<void> }
  | { type: 'Get'; reply: (items: number[]) => void }

export interface ProbeState {
  items: number[]
}

/** What a probe actor did, seen from outside (its state is reset on restart; this log is not). */
export interface ProbeLog {
  handled: number[]
  inits: number
  stopped: ProbeState[]
}

export function newProbeLog(): ProbeLog {
  return { handled: [], inits: 0, stopped: [] }
}

export function probe(
  log: ProbeLog,
  opts: { kind?: string; policy?: Partial<SupervisionPolicy>; mailboxCapacity?: number; idleStopMs?: number } = {},
): ActorDef<ProbeState, ProbeMsg> {
  return {
    kind: opts.kind ?? 'probe',
    policy: opts.policy,
    mailboxCapacity: opts.mailboxCapacity,
    idleStopMs: opts.idleStopMs,
    init: () => {
      log.inits++
      return { items: [] }
    },
    handle: async (state, msg) => {
      switch (msg.type) {
        case 'Push':
          log.handled.push(msg.n)
          return { items: [...state.items, msg.n] }
        case 'Boom':
          throw new Error('boom')
        case 'Reject':
          return Promise.reject(new Error('rejected'))
        case 'Hold':
          await msg.until
          return state
        case 'Get':
          msg.reply(state.items)
          return state
      }
    },
    afterStop: (state) => {
      log.stopped.push(state)
    },
  }
}

export const quickBackoff: Partial<SupervisionPolicy> = {
  backoff: { minMs: 100, maxMs: 1000, jitter: 0 },
}
