// NIP-29 channel set-up over the wire (a 9007, then its put-users) and NIP-42 authenticated connections: what
// the channel scenarios do before their clock starts.
import WebSocket from 'ws'
import { type BenchEvent, type benchKeys, signEvent } from './fixtures'

type Key = ReturnType<typeof benchKeys>[number]

/**
 * `setup` = a 9007 and its put-users: the 9007 first (alone: the put-users need the channel), then the
 * put-users pipelined; any refusal throws. `host`: a community's host name, as in bench/lib/load/connect.ts.
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
