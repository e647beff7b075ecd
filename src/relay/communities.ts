// Community lifecycle, part of the composition root: spawn each community actor with its link to the other
// nodes and, beside it, its agent registry; reconcile the running set with the store (revalidation, archiving).
import { communityActor, communityPath } from '../actors/community/community-actor.js'
import { type CommunityLink, createCommunityLink } from '../actors/community/community-link.js'
import { pubkeysHeld } from '../actors/community/community-presence.js'
import type { CommunityDeps, CommunitySurvivors } from '../actors/community/community-state.js'
import { createCommunitySurvivors } from '../actors/community/community-survivors.js'
import type { CommunityMsg, MembersChange, PublishOutcome } from '../actors/community/messages.js'
import type { CommunityJobs } from '../actors/jobs/community-jobs.js'
import { ask, createLagReporter, type Kernel, type LagReporter, tell } from '../actors/kernel/index.js'
import type { RegistryDeps } from '../actors/registry/agent-tracking.js'
import type { RegistryAnnounce, RegistryMsg } from '../actors/registry/messages.js'
import { registryActor, registryPath } from '../actors/registry/registry-actor.js'
import type { CommunityKeys } from '../infra/community-key.js'
import type { Config } from '../infra/config.js'
import type { ConsoleCounters } from '../infra/console/community-counters.js'
import type { Tenants } from '../infra/http/tenants.js'
import type { Logger } from '../infra/log.js'
import type { Metrics } from '../infra/metrics.js'
import { type RelayKey, signAsRelay } from '../infra/relay-key.js'
import type { CommunityRecord } from '../infra/store/community-store.js'
import type { Verifier } from '../infra/verify/verifier.js'
import { agentTimingOf, presenceLeaseSeconds } from '../protocols/agent-connection-state.js'
import type { AgentConnectionsView } from '../protocols/console.js'
import type { ForwardedAuth } from '../protocols/mesh/session-frames.js'
import type { VerifiedEvent } from '../protocols/nip01/event.js'
import type { Backends } from './backends.js'
import { communityJobsOf } from './community-jobs.js'
import type { MeshJobs } from './mesh-jobs.js'

export interface CommunitiesDeps {
  kernel: Kernel
  config: Config
  backends: Backends
  verifier: Verifier
  /** signs the control payloads between the nodes */
  relayKey: RelayKey
  /** sign what the relay publishes for each community */
  communityKeys: CommunityKeys
  tenants: Tenants
  metrics: Metrics
  /** the console's per-community counts (infra/console/community-counters.ts) */
  counters?: ConsoleCounters
  log: Logger
  nowSeconds: () => number
  /** elapsed time for cache TTLs and heartbeat ages; default performance.now() (tests bring their own) */
  nowMs?: () => number
  /** epoch ms, for when an agent connection registered; default Date.now() */
  wallMs?: () => number
  /** drop this node's copy of a community's blocked IPs (node.ts keeps them, blocked-ips.ts) */
  blockListChanged: (community: string) => void
  /** the relay mesh, when on: channel changes go to each channel's owner node, jobs to each capability's */
  mesh?: {
    moderate(community: string, channel: string, event: VerifiedEvent, raw: string, auth: ForwardedAuth): Promise<PublishOutcome>
    jobs?: MeshJobs
  }
}

export interface Communities {
  start(records: CommunityRecord[]): void
  /** events removed outright (NIP-86 banevent): the jobs they requested are cancelled, their assignees revoked */
  removed(id: string, eventIds: readonly string[]): void
  /** re-read the store's active communities: close and stop archived ones, serve new ones */
  reconcile(): Promise<void>
  /** archive in the store, close here and on every other node; false when unknown */
  archive(id: string): Promise<boolean>
  /**
   * Reconcile here now, and ask every other node to (an `InvalidateAll` on `via`'s cache-invalidation channel:
   * every node serving `via` hears it). Best effort: a lost broadcast waits for the next revalidation.
   */
  announce(via: string): Promise<void>
  /**
   * The allowed list changed (NIP-86): this node's community publishes the NIP-43 8000/8001 and member list;
   * resolves once they are stored. Best effort: a failure is logged, the list follows at the next change.
   */
  membersChanged(id: string, change: MembersChange): Promise<void>
  /**
   * This node's agent connections of a running community, to read (never to change): its `nowMs` is epoch ms
   * (Date.now()), the console's clock. Undefined for a community not served here.
   */
  agentConnectionsOf(id: string): AgentConnectionsView | undefined
}

export function createCommunities(d: CommunitiesDeps): Communities {
  // cache TTLs, stuck-write and heartbeat ages are elapsed time (monotonic): a backward wall-clock step must not stretch them
  const nowMs = d.nowMs ?? (() => performance.now())
  const wallMs = d.wallMs ?? (() => Date.now())
  const running = new Set<string>()
  const links = new Map<string, CommunityLink>()
  const agents = new Map<string, AgentConnectionsView>()
  const dispatch = new Map<string, CommunityJobs>()
  const refOf = (id: string) => d.kernel.lookup<CommunityMsg>(communityPath(id))

  function spawn(record: CommunityRecord) {
    running.add(record.id)
    const path = communityPath(record.id)
    // architecture §4.7: where a bounded queue skips, the skip is a 'lagged' supervision event (and a metric)
    const lag = createLagReporter(d.kernel, { path, kind: 'community' })
    const link = linkOf(record.id, path, lag)
    links.set(record.id, link)
    const deps = communityDeps(record, link, lag)
    let survivors: CommunitySurvivors | undefined
    const jobs = communityJobsOf(
      {
        kernel: d.kernel,
        clustered: d.backends.mode === 'cluster',
        config: d.config,
        wallMs,
        ...(d.mesh?.jobs ? { mesh: d.mesh.jobs } : {}),
      },
      deps,
      () => survivors!,
    )
    if (jobs) {
      dispatch.set(record.id, jobs)
      deps.jobs = jobs
      deps.agents.changed = (conn, what) => ('active' in what ? jobs.agentActive(what.active) : jobs.agentGone(conn, what.gone))
    }
    // the registry reads the community's presence holds: both are given the same survivors
    survivors = createCommunitySurvivors(deps)
    agents.set(record.id, readOnlyAgents(survivors.agents, nowMs, wallMs))
    d.kernel.spawn(registryPath(record.id), registryActor(registryDeps(deps, survivors)))
    d.kernel.spawn(path, communityActor(deps, survivors))
    if (jobs) startDispatchers(record.id, jobs)
  }

  /** The dispatchers of capabilities with open jobs, once the store can say which: tried again until it can. */
  function startDispatchers(id: string, jobs: CommunityJobs, delayMs = 1_000): void {
    jobs.start().catch((error: unknown) => {
      if (!running.has(id)) return
      d.log.error({ err: error, community: id, retryInMs: delayMs }, 'job dispatchers not started; trying again')
      setTimeout(() => startDispatchers(id, jobs, Math.min(delayMs * 2, 30_000)), delayMs).unref()
    })
  }

  function linkOf(community: string, path: string, lag: LagReporter): CommunityLink {
    return createCommunityLink({
      community,
      bus: d.backends.bus,
      clustered: d.backends.mode === 'cluster',
      deliver: (msg) => {
        const ref = d.kernel.lookup<CommunityMsg>(path)
        return ref ? tell(ref, msg) : false
      },
      sign: (t) => signAsRelay(d.relayKey, t, d.nowSeconds()),
      metrics: d.metrics,
      log: d.log,
      lagged: (skipped) => lag.count(skipped),
      closed: () => lag.dispose(),
    })
  }

  function communityDeps(record: CommunityRecord, link: CommunityLink, lag: LagReporter): CommunityDeps {
    const { config, metrics, log, nowSeconds } = d
    const key = d.communityKeys.of(record.id)
    return {
      record,
      store: d.backends.events,
      channels: d.backends.channels,
      communities: d.backends.communities,
      communityPubkey: key.pubkey,
      formerPubkeys: d.communityKeys.formerOf(record.id),
      sign: (t, createdAt) => signAsRelay(key, t, createdAt),
      invites: d.backends.invites,
      authRequired: config.authRequired,
      accessCacheTtlMs: config.accessCacheTtlMs,
      maxHeldLiveBytes: config.limits.maxPendingOutboundBytes,
      limits: config.limits,
      channelRules: config.channels,
      nowSeconds,
      nowMs,
      metrics,
      counters: d.counters?.of(record.id),
      log,
      cluster: {
        link,
        verifier: d.verifier,
        relayPubkey: d.relayKey.pubkey,
        nowSeconds,
        log,
        rejected: (why: string) => metrics.controlRejected.inc({ reason: why }),
        revalidate: () => void reconcile(),
        blockListChanged: () => d.blockListChanged(record.id),
      },
      presence: {
        community: record.id,
        store: d.backends.presence,
        ttlSeconds: presenceLeaseSeconds(config.presenceHeartbeatSeconds),
        log,
      },
      agents: {
        timing: agentTimingOf(config.presenceHeartbeatSeconds, config.agentSessionTimeoutSeconds),
        scanIntervalMs: config.agentOrphanScanSeconds * 1000,
        wallMs,
      },
      registry: () => d.kernel.lookup<RegistryMsg>(registryPath(record.id)),
      mesh: d.mesh,
      lagged: (skipped) => {
        if (skipped === 0) return
        metrics.subscriptionsLost.inc(skipped)
        lag.count(skipped)
      },
    }
  }

  function registryDeps(c: CommunityDeps, survivors: CommunitySurvivors): RegistryDeps {
    const community = c.record.id
    return {
      community,
      presence: c.presence.store,
      events: c.store,
      sign: c.sign,
      communityRef: () => d.kernel.lookup<RegistryAnnounce>(communityPath(community)),
      heldHere: () => pubkeysHeld(survivors.presenceHolds),
      metrics: c.metrics,
      log: c.log,
      nowSeconds: c.nowSeconds,
      // two leases: a lookup or a goodbye's clear takes one store round trip; one that has not answered by then is lost
      transientMaxSeconds: 2 * c.presence.ttlSeconds,
      leaseSweepMs: d.config.leaseSweepSeconds * 1000,
    }
  }

  /**
   * Revalidation (architecture §6.7, durable backstops): the store's list of active communities is the truth. A
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
      links.delete(id)
      agents.delete(id)
      dispatch.delete(id)
      d.mesh?.jobs?.unregister(id)
      const ref = refOf(id)
      if (!ref) continue
      await ask<CommunityMsg, void>(
        ref,
        (done) => ({ type: 'DisconnectCommunity', reason: 'community archived', broadcast: false, done }),
        10_000,
      ).catch(() => {})
      // the registry and the dispatchers first: what they announce meanwhile would find their community stopped
      await d.kernel.stop(registryPath(id))
      await d.kernel.stopPrefix(`dispatcher/${id}/`)
      await d.kernel.stop(communityPath(id))
      d.log.info({ community: id }, 'community archived: closed and stopped')
    }
    for (const record of records) {
      if (!running.has(record.id)) spawn(record)
      else {
        // settings, roster, admins, kind rules or banned events may have changed: the actor re-reads them
        const ref = refOf(record.id)
        if (ref) tell(ref, { type: 'RecordChanged', record })
      }
    }
  }

  return {
    start: (records) => {
      for (const record of records) spawn(record)
    },
    removed: (id, eventIds) => dispatch.get(id)?.removed(eventIds),
    async announce(via) {
      await reconcile()
      await links
        .get(via)
        ?.broadcast('cache-invalidation', { op: 'InvalidateAll' })
        .catch((error: unknown) => d.log.warn({ err: error, community: via }, 'InvalidateAll broadcast failed'))
    },
    reconcile,
    async membersChanged(id, change) {
      const ref = refOf(id)
      if (!ref) return
      await ask<CommunityMsg, void>(ref, (done) => ({ type: 'MembersChanged', ...change, done }), 30_000).catch((error: unknown) =>
        d.log.warn({ err: error, community: id }, 'NIP-43 member events not published'),
      )
    },
    agentConnectionsOf: (id) => agents.get(id),
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

/**
 * The table read on the console's clock (epoch ms), translated to the community's monotonic one; only the
 * reading methods, so a caller cannot move an agent along.
 */
function readOnlyAgents(table: AgentConnectionsView, monotonicMs: () => number, wallMs: () => number): AgentConnectionsView {
  const here = (epochMs: number) => monotonicMs() + (epochMs - wallMs())
  return {
    rows: (nowMs) => table.rows(here(nowMs)),
    counts: (nowMs) => table.counts(here(nowMs)),
    stateOf: (conn, nowMs) => table.stateOf(conn, here(nowMs)),
  }
}
