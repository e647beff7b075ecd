// A verifier with a control lane. The bulk pool's threads run at a lower priority than the event loop
// (threads.writePathNice, thread-priority.mjs): ingest is bulk and may wait a few milliseconds. The frames an
// agent's handshake and lease wait on (AUTH, presence heartbeats, registry announcements) are few and each
// one holds a client, so src/relay/node.ts verifies them on the event loop itself (inline-verifier.ts): a
// handshake never waits for any thread to get a core, a wait that on busy shared cores is a latency tail of
// its own (bench `agents`).
//
// The kind is the client's choice, so the lane has a budget: past `maxPerSecond` control frames in one second
// the rest go to the bulk pool, and a flood of kind 20001 (or events relayed from other nodes) can take at
// most that much of the event loop.
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { Verifier } from './verifier.js'

export interface ControlLaneOptions {
  /** control frames verified on `control` per second at most; the rest of that second's go to `bulk` */
  maxPerSecond: number
  /** ms clock; default performance.now() */
  nowMs?: () => number
}

/** `isControl` events go to `control` (within the budget), the rest to `bulk`; closing closes both. */
export function withControlLane(
  bulk: Verifier,
  control: Verifier,
  isControl: (event: NostrEvent) => boolean,
  opts: ControlLaneOptions,
): Verifier {
  const nowMs = opts.nowMs ?? (() => performance.now())
  let windowStartMs = Number.NEGATIVE_INFINITY
  let used = 0
  const withinBudget = () => {
    const now = nowMs()
    if (now - windowStartMs >= 1000) {
      windowStartMs = now
      used = 0
    }
    return used++ < opts.maxPerSecond
  }
  return {
    threads: bulk.threads + control.threads,
    verify: (event) => (isControl(event) && withinBudget() ? control : bulk).verify(event),
    close: async () => {
      await Promise.all([bulk.close(), control.close()])
    },
  }
}
