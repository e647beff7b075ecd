// The lease side of a mesh session actor (docs/mesh.md §5), shared by the channel and capability sessions: the
// ACQUIRE with its floor from the database, the renewal timer, the lease's validity on the monotonic clock
// (read beside the actor by the work it runs), the retry timer of a forwarder, the RELEASE. The actor owns the
// decisions; this holds the lease's numbers and timers, and starts the I/O whose results come back as messages.
import type { AcquireOutcome, RenewOutcome, SessionDirectory } from '../../infra/mesh/session-directory.js'

export interface SessionLeaseDeps {
  directory: SessionDirectory
  /** the highest generation that wrote for the session (the ACQUIRE floor) */
  storedGeneration(community: string, session: string): Promise<number>
  renewMs: number
  /** monotonic ms */
  now(): number
}

export class SessionLease {
  generation = 0
  /** monotonic: no side effect starts after this (sent + TTL − drift, as the directory measured it) */
  validUntilMs = 0
  private renewTimer: NodeJS.Timeout | undefined
  private retryTimer: NodeJS.Timeout | undefined

  constructor(
    private readonly community: string,
    private readonly session: string,
    private readonly kind: string,
    private readonly d: SessionLeaseDeps,
  ) {}

  held(): boolean {
    return this.d.now() < this.validUntilMs
  }

  acquire(): Promise<AcquireOutcome> {
    return this.d
      .storedGeneration(this.community, this.session)
      .then((floor) => this.d.directory.acquire(this.community, this.session, this.kind, floor))
  }

  /**
   * The ACQUIRE gave this node the lease, or found its own (after a restart: valid only once a renewal says
   * so, which starts at once); renewals every renewMs call `renew`. Returns the generation.
   */
  own(o: AcquireOutcome, renew: () => void): number {
    this.generation = o.acquired ? o.lease.generation : o.holder.generation
    this.validUntilMs = o.acquired ? o.validUntilMs : 0
    clearInterval(this.renewTimer)
    this.renewTimer = setInterval(renew, this.d.renewMs)
    if (!o.acquired) renew()
    return this.generation
  }

  renew(): Promise<RenewOutcome> {
    return this.d.directory.renew(this.community, this.session, this.generation)
  }

  /** false: the renewal was refused, the lease is gone */
  renewed(o: RenewOutcome): boolean {
    if (!o.renewed) return false
    this.validUntilMs = o.validUntilMs
    return true
  }

  /** `acquire` after `ms`, replacing a retry already waiting */
  retryLater(ms: number, acquire: () => void): void {
    clearTimeout(this.retryTimer)
    this.retryTimer = setTimeout(acquire, ms)
  }

  /** gives the lease up (RELEASE); settles either way */
  release(): Promise<unknown> {
    const generation = this.generation
    this.stop()
    return this.d.directory.release(this.community, this.session, generation).catch(() => false)
  }

  /** no side effect from here on; the timers end */
  stop(): void {
    clearInterval(this.renewTimer)
    clearTimeout(this.retryTimer)
    this.validUntilMs = 0
  }
}
