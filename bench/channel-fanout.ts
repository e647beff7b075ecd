// Live fan-out through the NIP-29 access gate (src/actors/community/access-gate.ts), Apiary only: the baseline
// relay has no channels. Same subscriber and event counts as `fanout` (bench/load.ts), but every subscriber is
// authenticated (NIP-42) as its own key, in all three variants, so they differ only in what the gate does:
// - plain: kind 1 with `t`, no `h` tag (the gate skips channels altogether);
// - public channel: kind 9 with ["h","bench-pub"] (visibility read from the store for each event);
// - private channel: kind 9 with ["h","bench-priv"], private (each subscriber's membership looked up, then
//   cached per (channel, pubkey) for accessCacheTtlMs).
// Both channels get the same members (the 16 posting authors and every subscriber, by 9000 put-user from the
// creator, over the wire before the clock starts), so public and private differ only in the `private` flag.
import WebSocket from 'ws'
import { type BenchEvent, benchKeys, ingestEvents, signEvent } from './fixtures'
import { type FanoutResult, fanout } from './load'

export const CHANNEL_VARIANTS = ['plain', 'public channel', 'private channel'] as const
export type ChannelVariant = (typeof CHANNEL_VARIANTS)[number]
type ChannelName = Exclude<ChannelVariant, 'plain'>

type Key = ReturnType<typeof benchKeys>[number]

interface ChannelSet {
  id: string
  /** the creator's 9007, then one 9000 put-user per other author and per subscriber */
  setup: BenchEvent[]
  /** kind 9 posts to the channel, like the plain events (16 authors, ~250 bytes of content) */
  posts: BenchEvent[]
}

export interface ChannelFixtures {
  subscribers: Key[]
  plain: BenchEvent[]
  channels: Record<ChannelName, ChannelSet>
}

export type ChannelFanoutResult = FanoutResult & {
  /** 9007 + put-users over the wire, before the clock (0 for plain) */
  setupMs: number
  members: number
}

const AUTHORS = 16

/** Every key and event the scenario sends, except the AUTH events (they name each connection's challenge). */
export function channelFixtures(opts: { subscribers: number; events: number }): ChannelFixtures {
  const subscribers = benchKeys(opts.subscribers, 'channel-subscriber')
  const authors = benchKeys(AUTHORS, 'channel-author')
  const now = Math.floor(Date.now() / 1000)
  const channel = (id: string, flags: string[][]): ChannelSet => {
    const creator = authors[0]!
    const create = signEvent({ kind: 9007, created_at: now - 3_600, tags: [['h', id], ['name', id], ...flags], content: '' }, creator)
    const members = [...authors.slice(1), ...subscribers]
    const puts = members.map((m) =>
      signEvent(
        {
          kind: 9000,
          created_at: now - 3_600,
          tags: [
            ['h', id],
            ['p', m.pubkey],
          ],
          content: '',
        },
        creator,
      ),
    )
    const posts = Array.from({ length: opts.events }, (_, i) =>
      signEvent(
        {
          kind: 9,
          created_at: now - 1_800 + Math.floor((i * 1_700) / opts.events),
          tags: [['h', id]],
          content: `bench event ${i} `.repeat(14),
        },
        authors[i % AUTHORS]!,
      ),
    )
    return { id, setup: [create, ...puts], posts }
  }
  return {
    subscribers,
    plain: ingestEvents(opts.events),
    channels: { 'public channel': channel('bench-pub', []), 'private channel': channel('bench-priv', [['private']]) },
  }
}

/** One variant on a fresh relay at `url`: set the channel up (not timed), then `fanout` with authenticated subscribers. */
export async function channelFanout(
  url: string,
  variant: ChannelVariant,
  fx: ChannelFixtures,
  hooks: { onStart?: () => Promise<void> | void; onEnd?: () => Promise<void> | void } = {},
): Promise<ChannelFanoutResult> {
  let events = fx.plain
  let filter: Record<string, unknown> = { kinds: [1], '#t': ['bench'] }
  let setupMs = 0
  let members = 0
  if (variant !== 'plain') {
    const ch = fx.channels[variant]
    const t0 = performance.now()
    await setUpChannel(url, ch.setup)
    setupMs = Math.round(performance.now() - t0)
    members = ch.setup.length // the creator (admin) and everyone put in
    events = ch.posts
    filter = { kinds: [9], '#h': [ch.id] }
  }
  const r = await fanout(url, {
    subscribers: fx.subscribers.length,
    events,
    filter,
    openSubscriber: (i) => connectAuthed(url, [fx.subscribers[i]!]),
    ...hooks,
  })
  return { ...r, setupMs, members }
}

/**
 * `setup` = a 9007 and its put-users: the 9007 first (alone: the put-users need the channel), then the
 * put-users pipelined; any refusal throws. `host`: a community's host name, as in bench/load.ts `connect`.
 */
export async function setUpChannel(url: string, setup: BenchEvent[], host?: string): Promise<void> {
  const ws = await openSocket(url, host)
  try {
    await publishAll(ws, setup.slice(0, 1), 1)
    await publishAll(ws, setup.slice(1), 50)
  } finally {
    ws.terminate()
  }
}

function publishAll(ws: WebSocket, events: BenchEvent[], window: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const pending = new Set<string>()
    let next = 0
    const timer = setTimeout(() => fail(`channel set-up: no OK for ${[...pending][0]} within 60 s`), 60_000)
    const fail = (why: string) => {
      clearTimeout(timer)
      ws.off('message', onMessage)
      reject(new Error(why))
    }
    const fill = () => {
      while (pending.size < window && next < events.length) {
        const e = events[next++]!
        pending.add(e.id)
        ws.send(`["EVENT",${JSON.stringify(e)}]`)
      }
      if (pending.size === 0) {
        clearTimeout(timer)
        ws.off('message', onMessage)
        resolve()
      }
    }
    const onMessage = (data: WebSocket.RawData) => {
      const m = JSON.parse(data.toString()) as unknown[]
      if (m[0] !== 'OK' || !pending.delete(m[1] as string)) return
      if (m[2] !== true) return fail(`channel set-up: kind ${events.find((x) => x.id === m[1])!.kind} refused: ${String(m[3])}`)
      timer.refresh()
      fill()
    }
    ws.on('message', onMessage)
    ws.once('close', () => fail('channel set-up: the relay closed the connection'))
    fill()
  })
}

/** A socket with its message listener in place before the upgrade completes (the AUTH challenge can share its read). */
function openSocket(url: string, host: string | undefined, onMessage?: (ws: WebSocket, m: unknown[]) => void): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const headers = host ? { host: hostHeader(url, host) } : undefined
    const ws = new WebSocket(url, {
      perMessageDeflate: false,
      skipUTF8Validation: true,
      handshakeTimeout: 15_000,
      ...(headers ? { headers } : {}),
    })
    if (onMessage) ws.on('message', (data) => onMessage(ws, JSON.parse(data.toString()) as unknown[]))
    ws.once('open', () => {
      ws.removeAllListeners('error')
      ws.on('error', () => {}) // a later socket error shows up as 'close'
      resolve(ws)
    })
    ws.once('error', reject)
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)))
  })
}

const hostHeader = (url: string, host: string) => `${host}:${new URL(url).port}`

/**
 * Connect and answer the relay's AUTH challenge as each of `keys` (NIP-42 lets one connection authenticate
 * several pubkeys: one kind 22242 each, naming the challenge and the relay URL the relay sees — the URL dialed,
 * or `ws://<host>:<port>` when `host` is sent); resolves once the relay's OK accepts every one.
 */
export async function connectAuthed(url: string, keys: Key[], host?: string): Promise<WebSocket> {
  let settle: { resolve: () => void; reject: (e: Error) => void } | undefined
  const done = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject }
  })
  done.catch(() => {}) // awaited below; a refusal may come first
  const relayUrl = host ? `ws://${hostHeader(url, host)}` : url
  const waiting = new Set<string>()
  let challenged = false
  const ws = await openSocket(url, host, (socket, m) => {
    if (m[0] === 'AUTH' && typeof m[1] === 'string' && !challenged) {
      challenged = true
      const tags = [
        ['relay', relayUrl],
        ['challenge', m[1]],
      ]
      for (const key of keys) {
        const e = signEvent({ kind: 22242, created_at: Math.floor(Date.now() / 1000), tags, content: '' }, key)
        waiting.add(e.id)
        socket.send(JSON.stringify(['AUTH', e]))
      }
    } else if (m[0] === 'OK' && typeof m[1] === 'string' && waiting.delete(m[1])) {
      if (m[2] !== true) settle!.reject(new Error(`AUTH refused: ${String(m[3])}`))
      else if (waiting.size === 0) settle!.resolve()
    }
  })
  const timer = setTimeout(() => settle!.reject(new Error('no AUTH challenge/OK within 15 s')), 15_000)
  try {
    await done
  } catch (error) {
    ws.terminate()
    throw error
  } finally {
    clearTimeout(timer)
  }
  ws.removeAllListeners('message') // the load generator (fanout, ingest) attaches its own
  return ws
}
