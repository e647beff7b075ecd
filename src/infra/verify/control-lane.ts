// A verifier with a control lane. The bulk pool's threads run at a lower priority than the event loop
// (threads.writePathNice, thread-priority.mjs): ingest is bulk and may wait a few milliseconds. The frames an
// agent's handshake and lease wait on (AUTH, presence heartbeats, registry announcements) are few and each
// one holds a client, so they are verified on a thread of their own at the event loop's priority. Measured
// with 3,000 agents heartbeating beside four busy processes (bench `agents`, a packet capture of the probe's
// 300 handshakes; young generation as `npm start` sets it): the relay's AUTH OK p99 8.9 -> 3.9 ms, the
// announcement's 17.2 -> 9.7 ms, steady handshake p99 73.5 -> 32.8 ms (one run each).
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { Verifier } from './verifier.js'

/** `isControl` events go to `control`, the rest to `bulk`; closing closes both. */
export function withControlLane(bulk: Verifier, control: Verifier, isControl: (event: NostrEvent) => boolean): Verifier {
  return {
    threads: bulk.threads + control.threads,
    verify: (event) => (isControl(event) ? control : bulk).verify(event),
    close: async () => {
      await Promise.all([bulk.close(), control.close()])
    },
  }
}
