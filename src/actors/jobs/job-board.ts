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
  private readonly jobs = new Map<string, { capability: string; requester: string; holder?: Holder }>()
  private readonly open = new Map<string, number>()
  private readonly byRequester = new Map<string, number>()

  capabilityOf(job: string): string | undefined {
    return this.jobs.get(job)?.capability
  }

  holderOf(job: string): Holder | undefined {
    return this.jobs.get(job)?.holder
  }

  openCount(capability: string): number {
    return this.open.get(capability) ?? 0
  }

  /** capabilities with open jobs */
  get capabilities(): number {
    return this.open.size
  }

  openOf(requester: string): number {
    return this.byRequester.get(requester) ?? 0
  }

  add(job: string, capability: string, requester: string): void {
    if (this.jobs.has(job)) return
    this.jobs.set(job, { capability, requester })
    bump(this.open, capability, 1)
    bump(this.byRequester, requester, 1)
  }

  hold(job: string, holder: Holder | undefined): void {
    const entry = this.jobs.get(job)
    if (entry) entry.holder = holder
  }

  remove(job: string): void {
    const entry = this.jobs.get(job)
    if (!entry) return
    this.jobs.delete(job)
    bump(this.open, entry.capability, -1)
    bump(this.byRequester, entry.requester, -1)
  }

  /** a dispatcher (re)starting: what it held is read back from the store */
  forget(capability: string): void {
    for (const id of [...this.jobs.keys()]) if (this.jobs.get(id)!.capability === capability) this.remove(id)
  }

  /** The jobs of `capability` whose holder `keep` names move to `to` (with their holder); the rest are forgotten. */
  handOver(capability: string, to: JobBoard, keep: (h: Holder) => boolean): void {
    for (const [id, entry] of [...this.jobs]) {
      if (entry.capability !== capability) continue
      if (entry.holder && keep(entry.holder)) {
        to.add(id, capability, entry.requester)
        to.hold(id, entry.holder)
      }
      this.remove(id)
    }
  }

  /** who holds each held job of `capability` now */
  *holdsOf(capability: string): Iterable<[string, Holder]> {
    for (const [id, entry] of this.jobs) if (entry.capability === capability && entry.holder) yield [id, entry.holder]
  }

  /** the jobs `conn` holds now */
  heldBy(conn: string): string[] {
    const out: string[] = []
    for (const [id, entry] of this.jobs) if (entry.holder?.conn === conn) out.push(id)
    return out
  }
}

/** a count kept only while it is above 0, so the map holds what is open and nothing else */
function bump(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by
  if (n > 0) counts.set(key, n)
  else counts.delete(key)
}
