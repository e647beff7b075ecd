import WebSocket from 'ws'

export type Frame = [string, ...unknown[]]

/**
 * A raw NIP-01 client for tests: every received frame is kept; `next(pred)` resolves with the first frame
 * (already received or future) that matches and hasn't been consumed.
 */
export interface TestClient {
  ws: WebSocket
  frames: Frame[]
  send(msg: unknown): void
  sendRaw(text: string | Buffer, binary?: boolean): void
  next(pred: (f: Frame) => boolean, timeoutMs?: number): Promise<Frame>
  /** the OK frame for an event id */
  ok(id: string): Promise<Frame>
  /** frames of a subscription until (and excluding) its EOSE */
  collect(subId: string): Promise<Frame[]>
  closed: Promise<{ code: number; reason: string }>
  challenge(): Promise<string>
  close(): void
}

/** `host` sets the Host header; `headers` adds others (X-Forwarded-For from a test posing as a proxy). */
export async function connect(url: string, opts: { host?: string; headers?: Record<string, string> } = {}): Promise<TestClient> {
  const headers = { ...opts.headers, ...(opts.host ? { host: opts.host } : {}) }
  const ws = new WebSocket(url, Object.keys(headers).length > 0 ? { headers } : {})
  const frames: Frame[] = []
  const consumed = new Set<Frame>()
  const waiters: { pred: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = []
  ws.on('message', (data) => {
    const f = JSON.parse(data.toString()) as Frame
    frames.push(f)
    const i = waiters.findIndex((w) => w.pred(f))
    if (i >= 0) {
      consumed.add(f)
      waiters.splice(i, 1)[0]!.resolve(f)
    }
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  )
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)))
  })
  const next = (pred: (f: Frame) => boolean, timeoutMs = 5000) =>
    new Promise<Frame>((resolve, reject) => {
      const found = frames.find((f) => !consumed.has(f) && pred(f))
      if (found) {
        consumed.add(found)
        return resolve(found)
      }
      const waiter = {
        pred,
        resolve: (f: Frame) => {
          clearTimeout(timer)
          resolve(f)
        },
      }
      // a wait that timed out must stop claiming frames, or it swallows the ones a later wait expects
      const timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(waiter), 1)
        reject(new Error(`no matching frame in ${timeoutMs} ms; got ${JSON.stringify(frames).slice(0, 500)}`))
      }, timeoutMs)
      waiters.push(waiter)
    })
  return {
    ws,
    frames,
    send: (msg) => ws.send(JSON.stringify(msg)),
    sendRaw: (text, binary = false) => ws.send(text, { binary }),
    next,
    ok: (id) => next((f) => f[0] === 'OK' && f[1] === id),
    async collect(subId) {
      const eose = await next((f) => f[0] === 'EOSE' && f[1] === subId)
      const idx = frames.indexOf(eose)
      return frames.slice(0, idx).filter((f) => f[0] === 'EVENT' && f[1] === subId)
    },
    closed,
    challenge: async () => (await next((f) => f[0] === 'AUTH'))[1] as string,
    close: () => ws.close(),
  }
}
