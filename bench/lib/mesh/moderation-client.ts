// The clients of the mesh scenario: NIP-29 channel changes (9007 create, 9000 put-user), one
// in flight per connection, each timed from its send to its OK. No AUTH: a channel's creator becomes its
// admin, and the admin's put-users need no authenticated connection.
import type WebSocket from 'ws'
import { type BenchEvent, benchKeys, signEvent } from '../fixtures'
import { connect } from '../load/connect'
import { sleep } from './nodes'

export interface Answer {
  /** performance.now() at the send and at the OK */
  sentAt: number
  answeredAt: number
  accepted: boolean
  message: string
}

export interface ModerationClient {
  /** sends `event` and resolves with its OK (or `timeout:` / `closed:` when none comes) */
  send(event: BenchEvent, timeoutMs?: number): Promise<Answer>
  close(): void
}

/** A connection to `url` for the community bound to `host`; one event in flight at a time. */
export async function openModerationClient(url: string, host: string): Promise<ModerationClient> {
  const ws: WebSocket = await connect(url, 15_000, host)
  let waiting: { id: string; sentAt: number; done: (accepted: boolean, message: string) => void } | undefined
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString()) as unknown[]
    if (m[0] === 'OK' && waiting && m[1] === waiting.id) waiting.done(m[2] === true, String(m[3] ?? ''))
  })
  ws.on('close', () => waiting?.done(false, 'closed: the relay closed the connection'))
  return {
    send(event, timeoutMs = 30_000) {
      return new Promise<Answer>((resolve) => {
        const sentAt = performance.now()
        const timer = setTimeout(() => waiting?.done(false, `timeout: no OK within ${timeoutMs} ms`), timeoutMs)
        waiting = {
          id: event.id,
          sentAt,
          done: (accepted, message) => {
            clearTimeout(timer)
            waiting = undefined
            resolve({ sentAt, answeredAt: performance.now(), accepted, message })
          },
        }
        if (ws.readyState === ws.OPEN) ws.send(`["EVENT",${JSON.stringify(event)}]`)
        else waiting.done(false, 'closed: the connection is not open')
      })
    },
    close: () => ws.terminate(),
  }
}

/** Events of one admin: channel creations and put-users of fresh members, each with content of its own. */
export function channelEvents(label: string) {
  const admin = benchKeys(1, `${label}-admin`)[0]!
  let n = 0
  const now = () => Math.floor(Date.now() / 1000)
  return {
    create: (channel: string) =>
      signEvent(
        {
          kind: 9007,
          created_at: now(),
          tags: [
            ['h', channel],
            ['name', channel],
          ],
          content: `create ${channel}`,
        },
        admin,
      ),
    putUser: (channel: string) => {
      const member = benchKeys(1, `${label}-member`, n)[0]!
      return signEvent(
        {
          kind: 9000,
          created_at: now(),
          tags: [
            ['h', channel],
            ['p', member.pubkey],
          ],
          content: `put-user ${n++}`,
        },
        admin,
      )
    },
  }
}

/** Answers grouped by reason prefix (`error`, `timeout`, ...), the refusals only. */
export function refusalsByPrefix(answers: Answer[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const a of answers) {
    if (a.accepted) continue
    const prefix = a.message.includes(':') ? a.message.slice(0, a.message.indexOf(':')) : a.message || '(no reason)'
    out[prefix] = (out[prefix] ?? 0) + 1
  }
  return out
}

export interface PacedSender {
  answers: Answer[]
  /** resolves right after the next OK, at the start of the pause: nothing is in flight until it ends */
  nextGap(): Promise<void>
  /** the first accepted answer to an event sent at or after `t` (performance.now()); undefined after `timeoutMs` */
  firstAcceptedSentAfter(t: number, timeoutMs: number): Promise<Answer | undefined>
  stop(): Promise<void>
}

/** Sends `make()` over `client`, one at a time, each awaited, then pauses `gapMs`, until stopped. */
export function startPacedSender(client: ModerationClient, make: () => BenchEvent, gapMs: number): PacedSender {
  const answers: Answer[] = []
  const onAnswer = new Set<(a: Answer) => void>()
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const a = await client.send(make())
      answers.push(a)
      for (const f of [...onAnswer]) f(a)
      if (a.message.startsWith('closed:')) return
      await sleep(gapMs)
    }
  })()
  const waitFor = (match: (a: Answer) => boolean, timeoutMs: number) =>
    new Promise<Answer | undefined>((resolve) => {
      const timer = setTimeout(() => {
        onAnswer.delete(f)
        resolve(undefined)
      }, timeoutMs)
      const f = (a: Answer) => {
        if (!match(a)) return
        clearTimeout(timer)
        onAnswer.delete(f)
        resolve(a)
      }
      onAnswer.add(f)
    })
  return {
    answers,
    nextGap: async () => {
      await waitFor(() => true, 60_000)
    },
    firstAcceptedSentAfter(t, timeoutMs) {
      const already = answers.find((a) => a.accepted && a.sentAt >= t)
      return already ? Promise.resolve(already) : waitFor((a) => a.accepted && a.sentAt >= t, timeoutMs)
    },
    async stop() {
      stopped = true
      await loop
    },
  }
}
