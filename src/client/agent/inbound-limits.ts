// The inbound guard's optional rate limits, as mature bot frameworks have them: a sliding window per global /
// channel (`h` tag) / author, so one noisy sender cannot make the agent work without bound. Past a limit the
// event is skipped; in `notify` mode the application also hears of it, at most once per window per key.
import type { NostrEvent } from '../../protocols/nip01/event.js'

export interface WindowLimit {
  maxEvents: number
  windowMs: number
}

export interface InboundLimitOptions {
  global?: WindowLimit
  perChannel?: WindowLimit
  perAuthor?: WindowLimit
  mode?: 'skip' | 'notify'
  /** `notify` mode: the event that went over, and the key (`global`, `h:<channel>`, `author:<pubkey>`) */
  onLimited?: (event: NostrEvent, key: string) => void
}

interface Window {
  /** arrival times within the window, oldest first */
  times: number[]
  notifiedAtMs: number | undefined
}

// keys idle past their window hold nothing; past this many the idle ones are forgotten
const MAX_KEYS = 10_000

export class InboundLimits {
  skipped = 0
  private readonly windows = new Map<string, Window>()

  constructor(private readonly opts: InboundLimitOptions) {}

  /** true when the event may reach the application; counts it against every key it touches */
  admit(event: NostrEvent, nowMs: number): boolean {
    const keys = this.keysOf(event)
    const over = keys.find(([key, limit]) => this.count(key, limit, nowMs) >= limit.maxEvents)
    if (over) {
      this.skipped++
      this.notify(event, over[0], over[1], nowMs)
      return false
    }
    for (const [key] of keys) this.windows.get(key)!.times.push(nowMs)
    return true
  }

  private keysOf(e: NostrEvent): [string, WindowLimit][] {
    const keys: [string, WindowLimit][] = []
    if (this.opts.global) keys.push(['global', this.opts.global])
    const channel = e.tags.find((t) => t[0] === 'h')?.[1]
    if (this.opts.perChannel && channel !== undefined) keys.push([`h:${channel}`, this.opts.perChannel])
    if (this.opts.perAuthor) keys.push([`author:${e.pubkey}`, this.opts.perAuthor])
    return keys
  }

  private count(key: string, limit: WindowLimit, nowMs: number): number {
    let w = this.windows.get(key)
    if (!w) {
      if (this.windows.size >= MAX_KEYS) this.forgetIdle(nowMs)
      w = { times: [], notifiedAtMs: undefined }
      this.windows.set(key, w)
    }
    while (w.times.length > 0 && nowMs - w.times[0]! >= limit.windowMs) w.times.shift()
    return w.times.length
  }

  private notify(event: NostrEvent, key: string, limit: WindowLimit, nowMs: number): void {
    if (this.opts.mode !== 'notify' || !this.opts.onLimited) return
    const w = this.windows.get(key)!
    if (w.notifiedAtMs !== undefined && nowMs - w.notifiedAtMs < limit.windowMs) return
    w.notifiedAtMs = nowMs
    this.opts.onLimited(event, key)
  }

  private forgetIdle(nowMs: number): void {
    const longest = Math.max(this.opts.global?.windowMs ?? 0, this.opts.perChannel?.windowMs ?? 0, this.opts.perAuthor?.windowMs ?? 0)
    for (const [key, w] of this.windows) {
      const newest = w.times.at(-1) ?? w.notifiedAtMs ?? 0
      if (nowMs - newest >= longest) this.windows.delete(key)
    }
  }
}
