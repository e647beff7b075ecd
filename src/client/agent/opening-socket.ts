// One connection opened for a connection attempt, possibly beside discovery (docs/agent-client.md,
// DISCOVERED), with the AUTH challenge the relay sends on it. Until the attempt adopts it, a close is held for
// adopt() to report (the attempt then fails with it, as a close during the handshake would). Once ended, its
// handlers fall silent; ended before it was adopted, it is also terminated.
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { closeError, Transient } from './attempt-errors.js'
import type { TimerHandle } from './clock.js'
import type { ResolvedOptions } from './options.js'
import { RelaySocket } from './relay-socket.js'

/** What the attempt hears from the connection; `onClose` only once it adopted it. */
export interface Inbound {
  onEvent(subId: string, event: NostrEvent): void
  onEose(subId: string): void
  onClosed(subId: string, reason: string): void
  onClose(code: number, reason: string): void
}

export class OpeningSocket {
  readonly socket: Promise<RelaySocket>
  private live = true
  private adopted = false
  private closedEarly: { code: number; reason: string } | undefined
  private challenge: string | undefined
  private wake: (() => void) | undefined
  private challengeTimer: TimerHandle | undefined

  constructor(
    readonly url: string,
    private readonly o: ResolvedOptions,
    inbound: Inbound,
  ) {
    const handlers = {
      onEvent: (subId: string, event: NostrEvent) => this.live && inbound.onEvent(subId, event),
      onEose: (subId: string) => this.live && inbound.onEose(subId),
      onClosed: (subId: string, reason: string) => this.live && inbound.onClosed(subId, reason),
      onAuthChallenge: (value: string) => {
        if (!this.live) return
        this.challenge = value
        this.wake?.()
      },
      onClose: (code: number, reason: string) => {
        if (!this.live) return
        if (this.adopted) inbound.onClose(code, reason)
        else this.closedEarly = { code, reason }
      },
    }
    // async: `ws` throws at once for a URL it cannot parse, which then fails the attempt like a refused connection
    this.socket = (async () => RelaySocket.open(url, o.clock, o.handshakeTimeoutMs, handlers, o.localAddress))().catch((error: Error) => {
      throw new Transient(error.message)
    })
    // observed when the attempt gets to it; it must not go unhandled before (discovery failed, signing threw)
    this.socket.catch(() => {})
  }

  /** the attempt goes on with this connection; throws what a close before now means */
  adopt(): void {
    if (this.closedEarly) throw closeError(this.closedEarly.code, this.closedEarly.reason)
    this.adopted = true
  }

  /** opened for a relay discovery did not choose: closed unused; an adopted connection is the attempt's to end */
  discard(): void {
    if (!this.adopted) this.end()
  }

  /** Silences the handlers and clears the wait for the challenge; a connection not adopted is terminated. */
  end(): void {
    if (!this.live) return
    this.live = false
    if (this.challengeTimer !== undefined) this.o.clock.clearTimeout(this.challengeTimer)
    this.challengeTimer = undefined
    this.wake = undefined
    if (!this.adopted)
      void this.socket.then(
        (s) => s.terminate(),
        () => {},
      )
  }

  /** NIP-42: the relay's challenge, sent with the open or later; a relay that sends none fails the attempt */
  awaitChallenge(): Promise<string> {
    return new Promise((resolve, reject) => {
      const timeoutMs = this.o.handshakeTimeoutMs
      const timer = this.o.clock.setTimeout(() => reject(new Transient(`no AUTH challenge within ${timeoutMs} ms`)), timeoutMs)
      this.challengeTimer = timer
      const check = () => {
        if (this.challenge === undefined) return
        this.o.clock.clearTimeout(timer)
        this.wake = undefined
        this.challengeTimer = undefined
        resolve(this.challenge)
      }
      this.wake = check
      check()
    })
  }
}
