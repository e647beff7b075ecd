// A small NIP-01 client for `apiary channel`: connect, answer the relay's NIP-42 challenge with the given key,
// then publish events or run a query. Works against any relay that sends its AUTH challenge on connect.
import WebSocket from 'ws'
import type { NostrEvent } from '../protocols/nip01/event.js'
import { KIND_AUTH } from '../protocols/nip01/kinds.js'
import { type EventTemplate, type SigningKey, signTemplate } from '../protocols/nip01/sign.js'

/** The relay's answer to an EVENT or AUTH (NIP-01 `OK`): `message` is the reason, prefix included. */
export interface RelayAnswer {
  /** the id of the event sent (a moderator's `banevent` needs it) */
  id: string
  accepted: boolean
  message: string
}

/** A REQ filter in its wire form (`#d`, `#h` ... as the client sends them). */
export type WireFilter = Record<string, unknown>

export interface RelaySession {
  /** the pubkey the session authenticated as */
  pubkey: string
  publish(t: EventTemplate): Promise<RelayAnswer>
  /** the stored events up to EOSE, or the CLOSED reason when the relay refuses the REQ */
  query(filter: WireFilter): Promise<{ events: NostrEvent[] } | { closed: string }>
  close(): Promise<void>
}

export type RelayClientErrorCode = 'RELAY_UNREACHABLE' | 'RELAY_TIMEOUT' | 'RELAY_CLOSED' | 'AUTH_REFUSED'

/** Why a session could not be opened or an answer never came; `code` is stable, `message` is for people. */
export class RelayClientError extends Error {
  constructor(
    readonly code: RelayClientErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'RelayClientError'
  }
}

export interface SessionOptions {
  /** the relay's ws(s) URL; it is also the NIP-42 `relay` tag, so it must be the URL the relay sees */
  url: string
  key: SigningKey
  /** how long any one answer (open, challenge, OK, EOSE) may take */
  timeoutMs?: number
  nowSeconds?: () => number
}

// A relay answers an OK or an EOSE in milliseconds; ten seconds is a relay that is not answering.
const DEFAULT_TIMEOUT_MS = 10_000

type Frame = [string, ...unknown[]]

/** Connects and authenticates. Throws RelayClientError; `AUTH_REFUSED` carries the relay's reason. */
export async function openRelaySession(opts: SessionOptions): Promise<RelaySession> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const now = opts.nowSeconds ?? (() => Math.floor(Date.now() / 1000))
  const inbox = await connect(opts.url, timeoutMs)
  let subCounter = 0
  try {
    // NIP-42: the relay sends ["AUTH", <challenge>]; Apiary sends it as soon as the socket opens
    const challenge = (await inbox.next((f) => f[0] === 'AUTH' && typeof f[1] === 'string', 'an AUTH challenge'))[1] as string
    const tags = [
      ['relay', opts.url],
      ['challenge', challenge],
    ]
    const authAnswer = await send(inbox, 'AUTH', signTemplate(opts.key, { kind: KIND_AUTH, content: '', tags }, now()))
    if (!authAnswer.accepted) throw new RelayClientError('AUTH_REFUSED', authAnswer.message || 'the relay refused AUTH')
  } catch (error) {
    await inbox.close()
    throw error
  }
  return {
    pubkey: opts.key.pubkey,
    publish: (t) => send(inbox, 'EVENT', signTemplate(opts.key, t, now())),
    async query(filter) {
      const subId = `apiary-${++subCounter}`
      inbox.send(['REQ', subId, filter])
      const end = await inbox.next((f) => (f[0] === 'EOSE' || f[0] === 'CLOSED') && f[1] === subId, `EOSE for ${subId}`)
      if (end[0] === 'CLOSED') return { closed: String(end[2] ?? '') }
      inbox.send(['CLOSE', subId])
      return { events: inbox.seen.filter((f) => f[0] === 'EVENT' && f[1] === subId).map((f) => f[2] as NostrEvent) }
    },
    close: () => inbox.close(),
  }
}

async function send(inbox: Inbox, verb: 'EVENT' | 'AUTH', event: NostrEvent): Promise<RelayAnswer> {
  inbox.send([verb, event])
  const f = await inbox.next((x) => x[0] === 'OK' && x[1] === event.id, `OK for ${event.id}`)
  return { id: event.id, accepted: f[2] === true, message: typeof f[3] === 'string' ? f[3] : '' }
}

interface Inbox {
  send(frame: unknown[]): void
  /** the first matching frame after the ones earlier waits looked at: frames are read in order, once */
  next(pred: (f: Frame) => boolean, what: string): Promise<Frame>
  /** every frame a wait has looked at, in order (a query picks its EVENTs from these) */
  seen: Frame[]
  close(): Promise<void>
}

async function connect(url: string, timeoutMs: number): Promise<Inbox> {
  const ws = new WebSocket(url, { handshakeTimeout: timeoutMs })
  const frames: Frame[] = []
  let cursor = 0
  let closedWith: RelayClientError | undefined
  const wake = new Set<() => void>()
  ws.on('message', (data) => {
    try {
      const f = JSON.parse(data.toString()) as unknown
      if (Array.isArray(f) && typeof f[0] === 'string') frames.push(f as Frame)
    } catch {
      return // not NIP-01; nothing we wait for
    }
    for (const w of wake) w()
  })
  // `ws` emits `error` and then `close`; either ends every wait
  ws.on('close', (code, why) => {
    closedWith ??= new RelayClientError(
      'RELAY_CLOSED',
      `the relay closed the connection (${code}${why.length ? ` ${why.toString()}` : ''})`,
    )
    for (const w of wake) w()
  })
  await new Promise<void>((resolve, reject) => {
    const refused = (error: RelayClientError) => {
      closedWith ??= error
      reject(closedWith)
    }
    ws.once('open', () => {
      ws.removeAllListeners('unexpected-response')
      ws.removeAllListeners('error')
      // after open, `close` follows any error and ends the waits
      ws.on('error', () => {})
      resolve()
    })
    // a relay refuses the upgrade with a status: 404 for a host it does not serve, 403 for a blocked IP
    ws.once('unexpected-response', (_req, res) => {
      refused(new RelayClientError('RELAY_UNREACHABLE', `cannot connect to ${url}: HTTP ${res.statusCode}`))
      ws.terminate()
    })
    ws.on('error', (error) =>
      refused(new RelayClientError('RELAY_UNREACHABLE', `cannot connect to ${url}: ${error.message}`, { cause: error })),
    )
  })
  const seen: Frame[] = []
  return {
    send: (frame) => ws.send(JSON.stringify(frame)),
    seen,
    next: (pred, what) =>
      new Promise<Frame>((resolve, reject) => {
        const check = () => {
          for (; cursor < frames.length; cursor++) {
            const f = frames[cursor]!
            seen.push(f)
            if (pred(f)) {
              cursor++
              return done(() => resolve(f))
            }
          }
          if (closedWith) done(() => reject(closedWith))
        }
        const timer = setTimeout(
          () => done(() => reject(new RelayClientError('RELAY_TIMEOUT', `no ${what} within ${timeoutMs} ms`))),
          timeoutMs,
        )
        const done = (settle: () => void) => {
          clearTimeout(timer)
          wake.delete(check)
          settle()
        }
        wake.add(check)
        check()
      }),
    close: () =>
      new Promise<void>((resolve) => {
        if (ws.readyState === WebSocket.CLOSED) return resolve()
        ws.once('close', () => resolve())
        ws.close()
      }),
  }
}
