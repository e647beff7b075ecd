// The community's NIP-43 member list (kind 13534, docs/nip43.md), republished beside the actor whenever its
// members may have changed. Republishes are coalesced: while one runs, every request waits for the next one,
// which reads the members after them all, so a burst of joins costs a few lists, not one each.
import type { Logger } from '../../infra/log.js'
import type { EventStore } from '../../infra/store/event-store.js'
import { asVerified, type NostrEvent } from '../../protocols/nip01/event.js'
import type { EventTemplate } from '../../protocols/nip01/sign.js'
import { KIND_RELAY_MEMBERS, listedMembersOf, memberListTemplate } from '../../protocols/nip43.js'
import type { RelayEvent } from './community-channels.js'

export interface MemberListDeps {
  community: string
  store: Pick<EventStore, 'query' | 'save'>
  sign: (t: EventTemplate, createdAt: number) => NostrEvent
  /** the members the list names now, in order (admins, agents, the allowed list), at most its cap */
  members: () => Promise<string[]>
  /** a store started (counted until its Announce is handled: community-reads.ts) and one that ended without */
  started: () => void
  ended: () => void
  /** the stored list: delivered here and published to the other nodes (an Announce to the actor) */
  announce: (stored: RelayEvent) => void
  nowSeconds: () => number
  log: Logger
}

// As the channel state (community-channels.ts): a few seconds ahead of the clock is harmless to clients;
// past that, a republish waits for the clock (a burst of joins makes one list a second).
const MAX_AHEAD_SECONDS = 5
// a version another node stored in between makes the save `superseded`: read again and retry, a few times
const MAX_RETRIES = 3

interface Waiting {
  promise: Promise<void>
  resolve: () => void
  reject: (error: unknown) => void
}

export class MemberList {
  private running = false
  private next: Waiting | undefined

  constructor(private readonly d: MemberListDeps) {}

  /** Resolves once a list read after this call is stored, or found the same as the stored one. */
  publish(): Promise<void> {
    if (!this.running) return this.start()
    if (!this.next) {
      let resolve!: () => void
      let reject!: (error: unknown) => void
      const promise = new Promise<void>((res, rej) => {
        resolve = res
        reject = rej
      })
      this.next = { promise, resolve, reject }
    }
    return this.next.promise
  }

  /** publish(), its failure logged: for republishes nobody waits on (a start, a roster change). */
  refresh(): void {
    this.publish().catch((error: unknown) => this.d.log.error({ err: error, community: this.d.community }, 'member list not published'))
  }

  private start(): Promise<void> {
    this.running = true
    const run = this.run()
    const after = () => {
      this.running = false
      const next = this.next
      this.next = undefined
      if (next) this.start().then(next.resolve, next.reject)
    }
    run.then(after, after)
    return run
  }

  private async run(): Promise<void> {
    const { d } = this
    const members = await d.members()
    const template = memberListTemplate(members)
    for (let attempt = 0; attempt <= MAX_RETRIES; attempt++) {
      const now = d.nowSeconds()
      // signed first: the signer's pubkey is the author of the stored list
      const draft = d.sign(template, now)
      const [current] = await d.store.query(d.community, [{ kinds: [KIND_RELAY_MEMBERS], authors: [draft.pubkey], limit: 1 }], { now })
      if (current ? sameMembers(listedMembersOf(current.event), members) : members.length === 0) return
      // NIP-01: the newest created_at wins, so each version is dated after the stored one
      const createdAt = current ? Math.max(now, current.event.created_at + 1) : now
      if (createdAt > now + MAX_AHEAD_SECONDS) await sleepSeconds(createdAt - now - MAX_AHEAD_SECONDS)
      const event = asVerified(createdAt === now ? draft : d.sign(template, createdAt))
      const raw = JSON.stringify(event)
      d.started()
      const saved = await d.store.save(d.community, event, raw).catch((error: unknown) => {
        d.ended()
        throw error
      })
      if (saved.status === 'saved') {
        d.announce({ event, raw })
        return
      }
      d.ended()
      // the same id: this very version is stored already
      if (saved.status === 'duplicate') return
      if (saved.status !== 'superseded') break
    }
    d.log.warn({ community: d.community }, 'member list not stored; the next change republishes it')
  }
}

const sameMembers = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((p, i) => p === b[i])

const sleepSeconds = (s: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, s * 1000).unref?.()
  })
