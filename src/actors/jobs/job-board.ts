// What one community's dispatchers hold, readable by the community without a message: which agent holds
// each open job at which generation (a streamed chunk is fenced here, in memory, as it is never stored), and
// how many jobs each capability holds open (the queue's bound, checked before a request is stored). Only
// the dispatchers change it; the community only reads it.

export interface Holder {
  pubkey: string
  conn: string
  generation: number
}

export class JobBoard {
  private readonly jobs = new Map<string, { capability: string; holder?: Holder }>()
  private readonly open = new Map<string, number>()

  capabilityOf(job: string): string | undefined {
    return this.jobs.get(job)?.capability
  }

  holderOf(job: string): Holder | undefined {
    return this.jobs.get(job)?.holder
  }

  openCount(capability: string): number {
    return this.open.get(capability) ?? 0
  }

  add(job: string, capability: string): void {
    if (this.jobs.has(job)) return
    this.jobs.set(job, { capability })
    this.open.set(capability, this.openCount(capability) + 1)
  }

  hold(job: string, holder: Holder | undefined): void {
    const entry = this.jobs.get(job)
    if (entry) entry.holder = holder
  }

  remove(job: string): void {
    const entry = this.jobs.get(job)
    if (!entry) return
    this.jobs.delete(job)
    const left = this.openCount(entry.capability) - 1
    if (left > 0) this.open.set(entry.capability, left)
    else this.open.delete(entry.capability)
  }

  /** a dispatcher (re)starting: what it held is read back from the store */
  forget(capability: string): void {
    for (const [id, entry] of this.jobs) if (entry.capability === capability) this.jobs.delete(id)
    this.open.delete(capability)
  }

  /** the jobs `conn` holds now */
  heldBy(conn: string): string[] {
    const out: string[] = []
    for (const [id, entry] of this.jobs) if (entry.holder?.conn === conn) out.push(id)
    return out
  }
}
