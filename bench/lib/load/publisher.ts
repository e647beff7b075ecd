// The publishing side of a fan-out load: one socket sends pre-serialized EVENTs, either keeping a window in
// flight or on an open-loop schedule, and counts the OKs by outcome.
import type WebSocket from 'ws'
import type { BenchEvent } from '../fixtures'
import { reasonPrefix } from './connect'

export interface PublishResult {
  published: number
  /** OK true, not a duplicate */
  accepted: number
  rejected: Record<string, number>
  /** when the last OK arrived (performance.now()), or when publishing started if none did */
  lastProgressMs: number
}

export interface PublishOptions {
  /** EVENTs kept un-acknowledged when not paced */
  window: number
  /** an open loop: publish at this rate (events/s) whatever the OKs, instead of a window */
  ratePerSec?: number
  /** called right before each EVENT is sent, with its id */
  onSend: (id: string) => void
}

export const eventFrames = (events: readonly BenchEvent[]) => events.map((e) => `["EVENT",${JSON.stringify(e)}]`)

/** Sends `frames` (one per event of `events`) on `pub`; resolves when every one is acknowledged, or on 30 s without an OK. */
export function publishEvents(
  pub: WebSocket,
  events: readonly BenchEvent[],
  frames: readonly string[],
  opts: PublishOptions,
): Promise<PublishResult> {
  const t0 = performance.now()
  const out: PublishResult = { published: 0, accepted: 0, rejected: {}, lastProgressMs: t0 }
  let acked = 0
  let inflight = 0
  return new Promise<PublishResult>((resolve) => {
    const end = () => {
      clearInterval(stall)
      clearInterval(pace)
      pub.removeAllListeners('message')
      resolve(out)
    }
    const stall = setInterval(() => {
      if (performance.now() - out.lastProgressMs > 30_000) end()
    }, 500)
    const send = () => {
      const i = out.published++
      inflight++
      opts.onSend(events[i]!.id)
      pub.send(frames[i]!)
    }
    // open loop: every 5 ms, what the rate says is due by now
    const rate = opts.ratePerSec
    const pace = rate
      ? setInterval(() => {
          const due = Math.min(frames.length, Math.floor(((performance.now() - t0) * rate) / 1000))
          while (out.published < due) send()
          if (out.published === frames.length) clearInterval(pace)
        }, 5)
      : undefined
    const fill = () => {
      if (!pace) while (inflight < opts.window && out.published < frames.length) send()
      if (acked === frames.length) end()
    }
    pub.on('message', (data) => {
      const s = data.toString()
      if (!s.startsWith('["OK"')) return
      const m = JSON.parse(s) as [string, string, boolean, string?]
      inflight--
      acked++
      out.lastProgressMs = performance.now()
      if (m[2] === true && !String(m[3] ?? '').startsWith('duplicate:')) out.accepted++
      else {
        const p = reasonPrefix(m[3])
        out.rejected[p] = (out.rejected[p] ?? 0) + 1
      }
      fill()
    })
    pub.once('close', end)
    fill()
  })
}
