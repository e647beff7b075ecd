// What the agent says about itself, signed with its key: the capabilities announcement (kind 31990) and its
// presence heartbeats (kind 20001). It outlives connections because a later announcement must win over an
// earlier one even within one second, and a change (the load, a capability served) is re-announced only once.
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { type EventTemplate, signTemplate } from '../../protocols/nip01/sign.js'
import type { Capability, ResolvedOptions } from './options.js'
import { announcementTemplate, heartbeatTemplate } from './registry-wire.js'

/** Phase four's two events: the capabilities announcement and the first heartbeat. */
export interface Registration {
  announcement: NostrEvent
  heartbeat: NostrEvent
}

/** What serve() adds to the announcement: capabilities beyond the options', and the concurrency tag. */
export interface ServedCapabilities {
  capabilities: Capability[]
  /** per capability served */
  concurrency: Record<string, number> | undefined
}

export class Announcer {
  /** 0..1 as the application last set it; undefined until it does */
  load: number | undefined
  private served: ServedCapabilities = { capabilities: [], concurrency: undefined }
  /** the tags and content last signed, to tell a changed announcement from a repeat */
  private announced: string | undefined
  private lastAnnouncedAt = 0

  constructor(private readonly o: ResolvedOptions) {}

  /** the announcement would say something else than the last one signed */
  get isStale(): boolean {
    return this.announced !== undefined && keyOf(this.template()) !== this.announced
  }

  /** the capabilities serve() added (those of the options are always announced) and the concurrency */
  setServed(served: ServedCapabilities): void {
    this.served = served
  }

  announcement(): NostrEvent {
    const template = this.template()
    const key = keyOf(template)
    // a later announcement must win over an earlier one of the same second (ties go to the lowest id)
    const createdAt = Math.max(this.nowSeconds(), this.lastAnnouncedAt + (key === this.announced ? 0 : 1))
    this.lastAnnouncedAt = createdAt
    this.announced = key
    return signTemplate(this.o.key, { ...template, created_at: createdAt }, createdAt)
  }

  heartbeat(status: 'online' | 'offline'): NostrEvent {
    return signTemplate(this.o.key, heartbeatTemplate(status), this.nowSeconds())
  }

  registration(): Registration {
    return { announcement: this.announcement(), heartbeat: this.heartbeat('online') }
  }

  nowSeconds(): number {
    return Math.floor(this.o.clock.now() / 1000)
  }

  private template(): EventTemplate {
    const named = new Set(this.o.capabilities.map((c) => c.name))
    const capabilities = [...this.o.capabilities, ...this.served.capabilities.filter((c) => !named.has(c.name))]
    return announcementTemplate(capabilities, this.o.version, this.load, this.served.concurrency)
  }
}

const keyOf = (t: EventTemplate): string => JSON.stringify([t.tags, t.content])
