// What the agent says about itself, signed with its key: the capabilities announcement (kind 31990) and its
// presence heartbeats (kind 20001). It outlives connections because a later announcement must win over an
// earlier one even within one second, and a changed load is re-announced only once.
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { signTemplate } from '../../protocols/nip01/sign.js'
import type { ResolvedOptions } from './options.js'
import { announcementTemplate, heartbeatTemplate } from './registry-wire.js'

/** Phase four's two events: the capabilities announcement and the first heartbeat. */
export interface Registration {
  announcement: NostrEvent
  heartbeat: NostrEvent
}

export class Announcer {
  /** 0..1 as the application last set it; undefined until it does */
  load: number | undefined
  private announcedLoad: number | undefined
  private lastAnnouncedAt = 0

  constructor(private readonly o: ResolvedOptions) {}

  /** the load changed since the last announcement was signed */
  get isLoadStale(): boolean {
    return this.load !== this.announcedLoad
  }

  announcement(): NostrEvent {
    // a later announcement must win over an earlier one of the same second (ties go to the lowest id)
    const createdAt = Math.max(this.nowSeconds(), this.lastAnnouncedAt + (this.announcedLoad === this.load ? 0 : 1))
    this.lastAnnouncedAt = createdAt
    this.announcedLoad = this.load
    return signTemplate(
      this.o.key,
      { ...announcementTemplate(this.o.capabilities, this.o.version, this.load), created_at: createdAt },
      createdAt,
    )
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
}
