// The heartbeats and the watchdog of one registered connection (docs/agent-client.md, ACTIVE to ZOMBIE):
// heartbeats go straight to the socket on their own timer, never behind the queue or a throttle, and the
// watchdog reads the relay's silence. Both timers belong to the connection attempt and stop with it.
import type { AgentState } from './agent-state.js'
import type { Announcer } from './announcer.js'
import type { TimerHandle } from './clock.js'
import type { ResolvedOptions } from './options.js'
import type { RelaySocket } from './relay-socket.js'

/** the share of a heartbeat interval taken off at random (see heartbeatIntervalMs) */
const HEARTBEAT_JITTER = 0.1

/** What the watchdog reports to the connection attempt. */
export interface SilenceReport {
  /** the agent's state now: the watchdog moves it between ACTIVE, SUSPECT and ZOMBIE */
  state(): AgentState
  degraded(state: 'SUSPECT' | 'ZOMBIE', cause: string): void
  recovered(): void
  /** silent for the whole session timeout: the connection is given up */
  timedOut(cause: string): void
}

export class Liveness {
  private heartbeatTimer: TimerHandle | undefined
  private watchdogTimer: TimerHandle | undefined
  /** a report can stop the connection (a state$ subscriber calling stop()): no timer may be set after that */
  private stopped = false

  constructor(
    private readonly socket: RelaySocket,
    private readonly o: ResolvedOptions,
    private readonly announcer: Announcer,
    /** the relay's lease (NIP-11) */
    private readonly leaseSeconds: number,
    private readonly report: SilenceReport,
  ) {
    this.scheduleHeartbeat()
    this.scheduleWatchdog()
  }

  stop(): void {
    this.stopped = true
    for (const t of [this.heartbeatTimer, this.watchdogTimer]) if (t !== undefined) this.o.clock.clearTimeout(t)
    this.heartbeatTimer = undefined
    this.watchdogTimer = undefined
  }

  private scheduleHeartbeat(): void {
    if (this.stopped) return
    this.heartbeatTimer = this.o.clock.setTimeout(() => {
      void this.socket.sendAndAwaitOk('EVENT', this.announcer.heartbeat('online'), this.o.heartbeatMs).catch(() => undefined)
      if (this.announcer.isStale)
        void this.socket.sendAndAwaitOk('EVENT', this.announcer.announcement(), this.o.okTimeoutMs).catch(() => undefined)
      this.scheduleHeartbeat()
    }, this.heartbeatIntervalMs())
  }

  /**
   * Ours, or faster when the relay's lease would not outlive two of ours lost (its NIP-11 says so), shortened
   * by up to HEARTBEAT_JITTER at random each time: agents that became ACTIVE together (a fleet started in
   * waves, every agent of a relay after its restart) would otherwise beat together for as long as they live,
   * a burst of signatures and verifications every interval. Only ever shorter, so the lease still holds.
   */
  private heartbeatIntervalMs(): number {
    return Math.min(this.o.heartbeatMs, (this.leaseSeconds * 1000) / 3) * (1 - HEARTBEAT_JITTER * this.o.random())
  }

  private scheduleWatchdog(): void {
    if (this.stopped) return
    this.watchdogTimer = this.o.clock.setTimeout(() => this.watch(), Math.min(1000, this.o.heartbeatMs / 4))
  }

  /**
   * SUSPECT after a heartbeat went unanswered (1.5 heartbeats of silence), ZOMBIE past the lease (the relay
   * has dropped us from discovery by then), and the socket is given up at the session timeout: a half-open
   * socket is found within it. Any frame from the relay makes the agent ACTIVE again.
   */
  private watch(): void {
    const silentMs = this.o.clock.now() - this.socket.lastInboundMs
    const silentFor = `no frame from the relay for ${Math.round(silentMs / 1000)} s`
    // already ZOMBIE (past the lease): the INIT that follows says why, a second ZOMBIE would say nothing new
    if (silentMs >= this.o.sessionMs) {
      this.report.timedOut(`${silentFor} (session timeout): dropped the connection`)
      return
    }
    const state = this.report.state()
    if (silentMs >= this.o.leaseMs && state !== 'ZOMBIE') this.report.degraded('ZOMBIE', `${silentFor} (past the lease)`)
    else if (silentMs >= this.o.heartbeatMs * 1.5 && state === 'ACTIVE')
      this.report.degraded('SUSPECT', `a heartbeat went unanswered (${Math.round(silentMs / 1000)} s of silence)`)
    else if (silentMs < this.o.heartbeatMs && (state === 'SUSPECT' || state === 'ZOMBIE')) this.report.recovered()
    this.scheduleWatchdog()
  }
}

/** The goodbye: presence "offline"; the relay's OK is the ACK that it removed us from discovery. */
export async function sayGoodbye(socket: RelaySocket, announcer: Announcer, timeoutMs: number): Promise<void> {
  const bye = announcer.heartbeat('offline')
  // the same id re-sent is idempotent
  for (let i = 0; i < 4 && socket.isOpen; i++) {
    const answer = await socket.sendAndAwaitOk('EVENT', bye, timeoutMs).catch(() => undefined)
    if (answer !== undefined) return
  }
}
