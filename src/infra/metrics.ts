import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/**
 * Every metric the node exports (docs/architecture.md §10), on a registry of its own so two relays in one
 * process don't clash.
 */
export function createMetrics() {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 })
  const r = [registry]
  // the store's own counts (read pool, writer thread), read at scrape time (the store knows nothing of metrics);
  // each backend has the ones that apply to it
  type StoreStats = Partial<{
    readsWaiting: number
    readBudgetExceeded: number
    readsInline: number
    readsMovedToWorker: number
    writerThread: boolean
    writerRespawns: number
    writerSynchronous: number | undefined
  }>
  const storeStats: { stats?: () => StoreStats } = {}
  /** a counter that mirrors one of the store's own running totals */
  const storeTotal = (name: string, help: string, pick: (s: StoreStats) => number | undefined) =>
    new Counter({
      name,
      help,
      registers: r,
      collect() {
        const s = storeStats.stats?.()
        const n = s === undefined ? undefined : pick(s)
        if (typeof n !== 'number') return
        this.reset()
        this.inc(n)
      },
    })
  return {
    registry,
    storeStats,
    storeReadsWaiting: new Gauge({
      name: 'apiary_store_reads_waiting',
      help: 'SQLite reads waiting for a read worker',
      registers: r,
      collect() {
        const s = storeStats.stats?.()
        if (typeof s?.readsWaiting === 'number') this.set(s.readsWaiting)
      },
    }),
    storeReadBudgetExceeded: storeTotal(
      'apiary_store_read_budget_exceeded_total',
      'store reads (REQ, COUNT) stopped at their time budget (SQLite store.queryTimeoutMs, PostgreSQL limits.readBudgetMs)',
      (s) => s.readBudgetExceeded,
    ),
    storeReadsInline: storeTotal(
      'apiary_store_reads_inline_total',
      'SQLite with read workers: reads answered on the event loop, within store.inlineReadMaxRows',
      (s) => s.readsInline,
    ),
    storeReadsMovedToWorker: storeTotal(
      'apiary_store_reads_moved_to_worker_total',
      'SQLite with read workers: reads that passed the inline budget on the event loop and moved to a read worker',
      (s) => s.readsMovedToWorker,
    ),
    storeSynchronous: new Gauge({
      name: 'apiary_store_synchronous',
      help: "SQLite: the committing connection's PRAGMA synchronous (1 NORMAL: store.durability process; 2 FULL: power)",
      registers: r,
      collect() {
        const s = storeStats.stats?.()
        if (typeof s?.writerSynchronous === 'number') this.set(s.writerSynchronous)
      },
    }),
    storeWriterThread: new Gauge({
      name: 'apiary_store_writer_thread',
      help: 'SQLite: 1 while writes commit on the writer thread, 0 on the main thread',
      registers: r,
      collect() {
        const s = storeStats.stats?.()
        if (typeof s?.writerThread === 'boolean') this.set(s.writerThread ? 1 : 0)
      },
    }),
    storeWriterRestarts: storeTotal(
      'apiary_store_writer_restarts_total',
      'SQLite writer threads replaced after they died (their batch failed with error:)',
      (s) => s.writerRespawns,
    ),
    connectionsActive: new Gauge({ name: 'apiary_connections_active', help: 'open WebSocket connections', registers: r }),
    connectionsTotal: new Counter({ name: 'apiary_connections_total', help: 'WebSocket connections accepted', registers: r }),
    connectionsRefused: new Counter({
      name: 'apiary_connections_refused_total',
      help: 'upgrades refused before the WebSocket opened',
      labelNames: ['reason'],
      registers: r,
    }),
    httpConnectionsClosed: new Counter({
      name: 'apiary_http_connections_closed_total',
      help: 'sockets closed before their first request arrived whole (too-many-pending per IP, timeout: headers or request too slow)',
      labelNames: ['reason'],
      registers: r,
    }),
    meshFenceRejections: new Counter({
      name: 'apiary_mesh_fence_rejections_total',
      help: 'mesh session frames and writes refused by the fence (stale, no-lease, future, owner-mismatch)',
      labelNames: ['reason'],
      registers: r,
    }),
    meshLeasesLost: new Counter({
      name: 'apiary_mesh_leases_lost_total',
      help: 'mesh sessions this node owned and lost without giving them up (renewal-refused, renewal-failed, fenced, superseded)',
      labelNames: ['reason'],
      registers: r,
    }),
    meshTunnelsClosed: new Counter({
      name: 'apiary_mesh_tunnel_closed_total',
      help: 'mesh tunnels ended, by reason (ended, draining, stale, lost, protocol; forged, replayed, reordered: a sealed frame that did not open)',
      labelNames: ['reason'],
      registers: r,
    }),
    meshHellosRefused: new Counter({
      name: 'apiary_mesh_hellos_refused_total',
      help: 'mesh handshakes this node refused as acceptor (rate-limited, unknown-runtime, invalid)',
      labelNames: ['reason'],
      registers: r,
    }),
    meshRegistrySkipped: new Counter({
      name: 'apiary_mesh_registry_skipped_total',
      help: 'mesh readiness records skipped (malformed, expired, foreign, unsigned)',
      registers: r,
    }),
    eventsReceived: new Counter({ name: 'apiary_events_received_total', help: 'EVENT messages received', registers: r }),
    eventsAccepted: new Counter({ name: 'apiary_events_accepted_total', help: 'events answered OK true', registers: r }),
    eventsRejected: new Counter({
      name: 'apiary_events_rejected_total',
      help: 'events answered OK false, by reason prefix',
      labelNames: ['reason'],
      registers: r,
    }),
    admissionRejections: new Counter({
      name: 'apiary_admission_rejections_total',
      help: 'rate-limit refusals',
      labelNames: ['type', 'reason'],
      registers: r,
    }),
    fanoutDeliveries: new Counter({
      name: 'apiary_fanout_deliveries_total',
      help: 'live EVENT frames queued to subscribers',
      registers: r,
    }),
    slowConsumerCloses: new Counter({
      name: 'apiary_slow_consumer_closes_total',
      help: 'connections closed for exceeding their outbound bound',
      registers: r,
    }),
    fanoutLag: new Counter({
      name: 'apiary_fanout_lag_total',
      help: 'remote events a community could not take (its mailbox full, or it was down)',
      registers: r,
    }),
    subscriptionsLost: new Counter({
      name: 'apiary_subscriptions_lost_total',
      help: 'subscriptions closed with CLOSED "error:" because an event for them could not be delivered (never a silent gap)',
      registers: r,
    }),
    connControlLag: new Counter({
      name: 'apiary_conn_control_lag_total',
      help: 'conn-control messages a community could not take',
      registers: r,
    }),
    cacheInvalidationLag: new Counter({
      name: 'apiary_cache_invalidation_lag_total',
      help: 'cache-invalidation messages a community could not take',
      registers: r,
    }),
    lagsActedOn: new Counter({
      name: 'apiary_lags_acted_on_total',
      help: 'losses from a bus stream a community heard of and acted on (closed subscriptions, dropped caches, re-checked bans)',
      labelNames: ['stream'] as const,
      registers: r,
    }),
    readsRefused: new Counter({
      name: 'apiary_reads_refused_total',
      help: 'REQ/COUNT refused or stopped for their cost (values: too many list values; rows, time: over the read budget)',
      labelNames: ['reason'] as const,
      registers: r,
    }),
    controlRejected: new Counter({
      name: 'apiary_control_rejected_total',
      help: 'control payloads refused (unsigned, foreign, stale, unknown op)',
      labelNames: ['reason'],
      registers: r,
    }),
    accessLookupFailures: new Counter({
      name: 'apiary_access_lookup_failures_total',
      help: 'live deliveries withheld because a membership or visibility lookup failed (fail closed)',
      registers: r,
    }),
    supervision: new Counter({
      name: 'apiary_supervision_events_total',
      help: 'actor supervision events',
      labelNames: ['type', 'kind', 'supervisor'],
      registers: r,
    }),
    storeLatency: new Histogram({
      name: 'apiary_store_seconds',
      help: 'store operation latency',
      labelNames: ['op'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: r,
    }),
    nip86SignatureChecks: new Counter({
      name: 'apiary_nip86_signature_checks_total',
      help: 'NIP-98 signatures of NIP-86 calls checked by the verifier pool, by verdict (ok, bad-id, bad-sig, error)',
      labelNames: ['verdict'],
      registers: r,
    }),
    inboundPauses: new Counter({
      name: 'apiary_inbound_pauses_total',
      help: 'times a socket stopped being read because its frames in flight passed limits.maxInboundBytesInFlight',
      registers: r,
    }),
    notices: new Counter({ name: 'apiary_notices_total', help: 'NOTICE frames sent (malformed input)', registers: r }),
    agentsLive: new Gauge({
      name: 'apiary_agents',
      help: 'agents tracked on this node with a live presence lease and a kind 31990 announcement',
      labelNames: ['state'],
      registers: r,
    }).labels({ state: 'live' }),
    agentLeasesExpired: new Counter({
      name: 'apiary_agent_leases_expired_total',
      help: 'agents whose presence lease lapsed (a kind 21990 "expired" was sent)',
      registers: r,
    }),
    agentByes: new Counter({ name: 'apiary_agent_byes_total', help: 'presence goodbyes (a kind 20001 "offline") answered', registers: r }),
    agentConnections: new Gauge({
      name: 'apiary_agent_connections',
      help: 'agent connections on this node by community and state (ACTIVE, SUSPECT, ZOMBIE), as of the last scan or transition',
      labelNames: ['community', 'state'],
      registers: r,
    }),
    agentHeartbeatAge: new Histogram({
      name: 'apiary_agent_heartbeat_age_seconds',
      help: "at each agent heartbeat, the time since that connection's previous one",
      // around the default 15 s heartbeat: on time, suspect (22.5 s), lapsed (45 s) and beyond
      buckets: [1, 2, 5, 10, 15, 20, 22.5, 30, 45, 60, 90, 120],
      registers: r,
    }),
    agentDepartures: new Counter({
      name: 'apiary_agent_departures_total',
      help: 'agent connections closed, by cause: goodbye, lease_lapsed, socket_closed, reaped',
      labelNames: ['cause'],
      registers: r,
    }),
    jobsQueued: new Counter({
      name: 'apiary_jobs_queued_total',
      help: 'dispatched job requests stored and queued (docs/jobs.md)',
      registers: r,
    }),
    jobAssignments: new Counter({
      name: 'apiary_job_assignments_total',
      help: 'jobs handed to an agent: first (its first assignment) or again (after its agent left, lapsed, refused or did not accept)',
      labelNames: ['attempt'],
      registers: r,
    }),
    jobsEnded: new Counter({
      name: 'apiary_jobs_ended_total',
      help: "dispatched jobs ended, by outcome: success, error (the agent's), exhausted, deadline, cancelled",
      labelNames: ['outcome'],
      registers: r,
    }),
    jobAssignmentSeconds: new Histogram({
      name: 'apiary_job_assignment_seconds',
      help: 'from a job queued (or back in the queue) to its assignment sent to an agent',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    }),
    jobReportsFenced: new Counter({
      name: 'apiary_job_reports_fenced_total',
      help: 'results, feedback and chunks refused "restricted:" because their sender was not the job\'s assignee at that generation',
      registers: r,
    }),
    jobNotesDropped: new Counter({
      name: 'apiary_job_notes_dropped_total',
      help: "what a node had to tell a job capability's dispatcher (a request or report stored, an agent gone) and dropped: its owner node, or the dispatcher itself, did not take it; the dispatcher's next read of the store makes up for it",
      registers: r,
    }),
    jobChunksDropped: new Counter({
      name: 'apiary_job_chunks_dropped_total',
      help: 'job chunks that did not reach another node (reason: full, the queue to it was full; failed, the tunnel did not take them)',
      labelNames: ['reason'] as const,
      registers: r,
    }),
    authShaped: new Counter({
      name: 'apiary_auth_shaped_total',
      help: 'AUTH messages answered "rate-limited:" because limits.maxConcurrentAuth verifications were already in flight',
      registers: r,
    }),
    authRefused: new Counter({
      name: 'apiary_auth_refused_total',
      help: 'AUTH messages answered "restricted:" for a limit of the connection',
      labelNames: ['reason'],
      registers: r,
    }),
    operatorRequestsRefused: new Counter({
      name: 'apiary_operator_requests_refused_total',
      help: 'requests for operator-only detail (/mesh/status, /health/ready with Authorization) refused, by reason prefix',
      labelNames: ['prefix'],
      registers: r,
    }),
    consoleSignIns: new Counter({
      name: 'apiary_console_sign_ins_total',
      help: 'console sign-ins, by outcome: ok, or the prefix of the refusal (invalid, restricted, rate-limited, error)',
      labelNames: ['outcome'],
      registers: r,
    }),
    busRejected: new Counter({
      name: 'apiary_bus_rejected_total',
      help: 'messages from the Redis bus dropped before delivery: mac (not signed with the cluster key), malformed (no origin)',
      labelNames: ['reason'],
      registers: r,
    }),
    authRejected: new Counter({
      name: 'apiary_auth_rejected_total',
      help: 'AUTH messages answered OK false, by the prefix of the reason (invalid, blocked, rate-limited, ...)',
      labelNames: ['prefix'],
      registers: r,
    }),
    handshakeSeconds: new Histogram({
      name: 'apiary_handshake_seconds',
      help: 'from the WebSocket open to the first AUTH answered OK true',
      // fine below 25 ms (the target for an agent's whole handshake), of which the relay's part is small
      buckets: [0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>
