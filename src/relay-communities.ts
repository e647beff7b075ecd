// Community lifecycle, part of the composition root: spawn each community actor with its link to the other
// nodes, and reconcile the running set with the store (revalidation, archiving).
import { communityActor, communityPath } from './actors/community/community-actor'
import { createCommunityLink } from './actors/community/community-link'
import type { CommunityMsg } from './actors/community/messages'
import { ask, type Kernel, tell } from './actors/kernel'
import type { Config } from './infra/config'
import type { Tenants } from './infra/http/tenants'
import type { Logger } from './infra/log'
import type { Metrics } from './infra/metrics'
import { type RelayKey, signAsRelay } from './infra/relay-key'
import type { CommunityRecord } from './infra/store/community-store'
import type { Verifier } from './infra/verify/verifier'
import type { Backends } from './relay-backends'

export interface CommunitiesDeps {
  kernel: Kernel
  config: Config
  backends: Backends
  verifier: Verifier
  relayKey: RelayKey
  tenants: Tenants
  metrics: Metrics
  log: Logger
  nowSeconds: () => number
}

export interface Communities {
  start(records: CommunityRecord[]): void
  /** re-read the store's active communities: close and stop archived ones, serve new ones */
  reconcile(): Promise<void>
  /** archive in the store, close here and on every other node; false when unknown */
  archive(id: string): Promise<boolean>
}

export function createCommunities(d: CommunitiesDeps): Communities {
  const running = new Set<string>()
  const refOf = (id: string) => d.kernel.lookup<CommunityMsg>(communityPath(id))

  function spawn(record: CommunityRecord) {
    running.add(record.id)
    const path = communityPath(record.id)
    const link = createCommunityLink({
      community: record.id,
      bus: d.backends.bus,
      deliver: (msg) => {
        const ref = d.kernel.lookup<CommunityMsg>(path)
        return ref ? tell(ref, msg) : false
      },
      sign: (t) => signAsRelay(d.relayKey, t, d.nowSeconds()),
      metrics: d.metrics,
      log: d.log,
    })
    const cluster = {
      link,
      verifier: d.verifier,
      relayPubkey: d.relayKey.pubkey,
      nowSeconds: d.nowSeconds,
      log: d.log,
      rejected: (why: string) => d.metrics.controlRejected.inc({ reason: why }),
      revalidate: () => void reconcile(),
    }
    const { config, metrics, log, nowSeconds } = d
    const presence = { community: record.id, store: d.backends.presence, ttlSeconds: 3 * config.presenceHeartbeatSeconds, log }
    d.kernel.spawn(path, communityActor({ record, store: d.backends.events, limits: config.limits, nowSeconds, metrics, log, cluster, presence }))
  }

  /**
   * Revalidation (DESIGN §5's durable backstop): the store's list of active communities is the truth. A
   * community no longer listed (archived) has its sockets closed and its actor stopped, so new upgrades get
   * 404; a community another node added is served from now on.
   */
  async function reconcile(): Promise<void> {
    let records: CommunityRecord[]
    try {
      records = await d.backends.communities.list()
    } catch (error) {
      d.log.warn({ err: error }, 'revalidation: community list unavailable; keeping the current one')
      return
    }
    d.tenants.replace(records)
    const active = new Set(records.map((r) => r.id))
    for (const id of [...running]) {
      if (active.has(id)) continue
      running.delete(id)
      const ref = refOf(id)
      if (!ref) continue
      await ask<CommunityMsg, void>(ref, (done) => ({ type: 'DisconnectCommunity', reason: 'community archived', broadcast: false, done }), 10_000).catch(
        () => {},
      )
      await d.kernel.stop(communityPath(id))
      d.log.info({ community: id }, 'community archived: closed and stopped')
    }
    for (const record of records) if (!running.has(record.id)) spawn(record)
  }

  return {
    start: (records) => {
      for (const record of records) spawn(record)
    },
    reconcile,
    async archive(id) {
      if (!(await d.backends.communities.archive(id, d.nowSeconds()))) return false
      // close here and tell every other node now; each node's revalidation is the backstop if that is lost
      const ref = refOf(id)
      if (ref) tell(ref, { type: 'DisconnectCommunity', reason: 'community archived', broadcast: true })
      await reconcile()
      return true
    },
  }
}
