import { cpus } from 'node:os'
import { z } from 'zod'
import { parseAddressRange } from '../protocols/address-range.js'
import { COMMUNITY_ID_PATTERN, HEX64_PATTERN, isHex64 } from '../protocols/ids.js'
import type { Config, ConfigInput } from './config-types.js'

/*
 * The single source of every setting: defaults, units in names, and why each non-obvious default is what it
 * is. Env names derive mechanically from the path (`limits.maxEventBytes` → APIARY_LIMITS_MAX_EVENT_BYTES).
 * `loadConfig` (load-config.ts) runs once; nothing else reads process.env.
 */

const hex64 = z.string().regex(HEX64_PATTERN)
const hex64OrEmpty = z.string().refine((s) => s === '' || isHex64(s), { message: 'must be 64 lowercase hex characters, or empty' })

const rule = (ratePerSecond: number, burst: number, what: string) =>
  z
    .object({
      ratePerSecond: z.number().positive().default(ratePerSecond).describe(`${what}: sustained rate, per second`),
      burst: z.number().int().positive().default(burst).describe(`${what}: bucket size (requests allowed at once)`),
    })
    .prefault({})

/** Numbers per tier: humans type; agents are programs and get more. Generous so normal clients never notice. */
const tier = (
  eventsPerSecond: number,
  eventsBurst: number,
  reqsPerSecond: number,
  reqsBurst: number,
  apiPerSecond: number,
  apiBurst: number,
  name: string,
) =>
  z
    .object({
      events: rule(eventsPerSecond, eventsBurst, `${name} EVENT`),
      // A client opening many subscriptions at start-up (a feed, notifications, DMs, profiles) sends
      // dozens of REQs at once: the burst is what lets it in.
      reqs: rule(reqsPerSecond, reqsBurst, `${name} REQ/COUNT`),
      // NIP-86 calls are moderation by hand or by a bot: an admin page loading its lists sends a few at once,
      // a clean-up script bans in batches (the burst); each call is a NIP-98 verification plus store writes
      // and, for settings, a reconcile on every node, so the sustained rate stays far below events'.
      api: rule(apiPerSecond, apiBurst, `${name} NIP-86 management call`),
    })
    .prefault({})

const limits = z
  .object({
    // strfry's default maxWebsocketPayloadSize is 131072; events with big contact lists (kind 3) reach ~100 KB.
    maxMessageBytes: z.number().int().positive().default(131_072).describe('largest WebSocket frame accepted, bytes (ws maxPayload)'),
    maxEventBytes: z.number().int().positive().default(131_072).describe('largest serialized event accepted, bytes'),
    maxContentBytes: z.number().int().positive().default(65_536).describe('largest event content, bytes (UTF-8)'),
    // strfry: 20 subscriptions per connection; we allow more because agents multiplex many channels.
    maxSubscriptions: z
      .number()
      .int()
      .positive()
      .default(50)
      .describe('open subscriptions per connection, and reads (REQ, COUNT) it may have waiting for its community'),
    maxFilters: z.number().int().positive().default(10).describe('filters per REQ/COUNT'),
    // A heavy user's follow list (maxEventTags: ~2,000 p tags) plus a few kinds fits in one REQ; a REQ's reads
    // cost per value, and the read budget (limits.maxRowsExamined) bounds what the values it allows may read.
    maxReqValues: z
      .number()
      .int()
      .positive()
      .default(2_500)
      .describe('values in the ids, authors, kinds and #tag lists of all the filters of one REQ/COUNT together'),
    maxLimit: z.number().int().positive().default(500).describe('largest `limit` served; larger ones are clamped, not refused'),
    defaultLimit: z.number().int().positive().default(100).describe('`limit` applied to a filter that has none'),
    // A REQ page is at most 10 filters × 500 rows; a normal read examines a few times its page. 100,000
    // candidate rows take a reader ~50-100 ms: far past any honest REQ, short enough to keep workers free.
    maxRowsExamined: z
      .number()
      .int()
      .positive()
      .default(100_000)
      .describe('rows the store may examine for one REQ/COUNT (all its filters); past it CLOSED "error: query too expensive: ..."'),
    // An honest read answers in milliseconds; 2 s is far above that on a loaded node, and below
    // store.queryTimeoutMs, the backstop that terminates a SQLite reader stuck between two rows. On PostgreSQL it
    // is also the read connections' statement_timeout, so the server stops a scan rather than running it on.
    readBudgetMs: z
      .number()
      .int()
      .positive()
      .default(2_000)
      .describe(
        'longest one REQ/COUNT may take in the store, from when it is asked for (waiting for a read worker or connection included); past it CLOSED "error: query too expensive: ..."',
      ),
    // NIP-01 recommends sub ids stay short; 64 fits any UUID/hex id a client makes.
    maxSubidLength: z.number().int().positive().default(64).describe('longest subscription id, characters'),
    // Kind 3 contact lists of heavy users reach ~2,000 p tags.
    maxEventTags: z.number().int().positive().default(2_500).describe('tags per event'),
    maxTagValueBytes: z.number().int().positive().default(1_024).describe('longest tag element, bytes'),
    // One year back keeps imports of older notes working; 15 minutes ahead tolerates skewed phone clocks.
    createdAtPastSeconds: z.number().int().nonnegative().default(31_536_000).describe('how far in the past created_at may be, seconds'),
    createdAtFutureSeconds: z.number().int().nonnegative().default(900).describe('how far in the future created_at may be, seconds'),
    // 4 MiB is ~8x the largest REQ result page (500 events x ~1 KB); a reader that lags further is a slow consumer.
    maxPendingOutboundBytes: z
      .number()
      .int()
      .positive()
      .default(4_194_304)
      .describe('bytes queued for one connection; a reader that stays over it for slowConsumerGraceMs (or goes over 4x) is closed'),
    // Eight frames of the largest size, or ~2,500 typical 400-byte events pipelined by one client: enough to
    // keep the verifier pool busy, while 1,000 connections flooding at once hold at most ~1 GiB.
    maxInboundBytesInFlight: z
      .number()
      .int()
      .positive()
      .default(1_048_576)
      .describe('bytes of frames one connection may have read and not yet answered; over it the socket is not read (TCP pushes back)'),
    // A healthy reader on a slow mobile link drains a 4 MiB page in a few seconds; one that can't is stuck.
    slowConsumerGraceMs: z
      .number()
      .int()
      .nonnegative()
      .default(5_000)
      .describe('how long a connection may stay over maxPendingOutboundBytes'),
    // Twice the per-IP connection burst: a page reload's handful of sockets times the dozens of people an
    // office or carrier NAT puts behind one address fits; one host parking thousands of idle sockets (each an
    // actor, ws buffers, a heartbeat) does not. Behind a proxy it only means something with trustedProxies set.
    maxConnectionsPerIp: z
      .number()
      .int()
      .positive()
      .default(200)
      .describe('WebSocket connections open at once from one client IP, across the cluster; one more is refused with HTTP 429'),
    // A browser opens a handful of sockets at once and each completes its handshake in one round trip; a
    // NAT of many such users rarely has more than a few dozen mid-handshake together. Slow-header senders
    // each hold a socket until headersTimeoutMs: this stops one address holding hundreds of them.
    maxPendingUpgradesPerIp: z
      .number()
      .int()
      .positive()
      .default(64)
      .describe(
        'TCP connections from one client IP (its ipv6PrefixLength network) whose first HTTP request or upgrade has not arrived whole, per node; one more is closed at once',
      ),
    // A reconnect storm of thousands of agents must spread out rather than queue without bound; with 256
    // AUTHs in flight (admission, signature on the event loop, ban lookup) the storm of bench `agents` still
    // settles promptly. Past it an AUTH is answered rate-limited with a jittered 1-5 s retry.
    maxConcurrentAuth: z
      .number()
      .int()
      .positive()
      .default(256)
      .describe('AUTH verifications in flight on one node; one more is answered "rate-limited: retry in Ns" (N jittered, 1-5)'),
    // NIP-42 lets a socket hold several identities: an agent, its owner and a spare fit in 4, while each more
    // key would be another budget for one socket to spend.
    maxPubkeysPerConnection: z
      .number()
      .int()
      .positive()
      .default(4)
      .describe('pubkeys one connection may authenticate as; an AUTH as one more is answered "restricted:" and the connection stays open'),
  })
  .prefault({})

export const configSchema = z
  .object({
    port: z.number().int().min(0).max(65_535).default(7777).describe('TCP port for WebSocket and HTTP'),
    host: z.string().default('127.0.0.1').describe('address to bind'),
    dataDir: z.string().default('./data').describe('directory for the SQLite file and the relay key'),
    // Cluster mode (architecture §9): both set ⇒ this node joins the cluster; both empty ⇒ embedded (default).
    redisUrl: z
      .string()
      .default('')
      .describe(
        'Redis for shared gates and cross-node fan-out: redis://[user:password@]host:port[/db] (rediss:// for TLS), or a Redis Cluster as redis+cluster://[user:password@]host:port[,host:port...] (seed nodes); empty = in-process',
      ),
    databaseUrl: z.string().default('').describe('PostgreSQL for events, communities and bans (postgres://...); empty = SQLite in dataDir'),
    // The relay mesh gives some state (a NIP-29 channel's moderation) exactly one owner node. Off by
    // default: the embedded relay has one node, and a cluster without it keeps the community actor as owner.
    mesh: z
      .enum(['off', 'on'])
      .default('off')
      .describe('the relay mesh: on gives each channel one owner node (needs redisUrl and databaseUrl)'),
    meshPort: z.number().int().min(0).max(65_535).default(7778).describe('TCP port for the tunnel between mesh nodes (0 = any free port)'),
    meshHost: z.string().default('').describe('address the mesh port binds; empty = the same as host'),
    // peers dial a few times a minute; a burst of 20 covers a node relinking to a dozen peers on one address
    meshHellosPerIpPerSecond: z
      .number()
      .positive()
      .default(5)
      .describe('Hellos the mesh port accepts per remote IP per second (burst 4x), before any is parsed'),
    // Behind NAT or in containers the bound address is not the one peers can dial.
    meshAdvertisedAddress: z
      .string()
      .regex(/^([^\s/:]+|\[[0-9a-fA-F:.]+\])?(:\d{1,5})?$/)
      .default('')
      .describe("host[:port] peers dial to reach this node's mesh port; empty = the bound address and port"),
    // TLS on the mesh port is an option on top of the tunnel's own AEAD (docs/mesh.md): both files or neither.
    meshTlsCertFile: z
      .string()
      .default('')
      .describe('PEM certificate (chain) the mesh port serves over TLS (wss://); set with meshTlsKeyFile; empty = plain ws://'),
    meshTlsKeyFile: z.string().default('').describe('PEM private key of meshTlsCertFile; set with it; empty = plain ws://'),
    meshTlsCaFile: z
      .string()
      .default('')
      .describe("PEM CA(s) a peer's mesh certificate is verified against when dialing its wss:// endpoint; empty = the system CAs"),
    // 6 s renewed every 2 s, so two renewals may fail in a row before the owner stops. A dead owner's
    // sessions are taken over within ~TTL + 1 s (Kubernetes leader election waits 15 s, Orleans ~15 s).
    meshLeaseTtlMs: z.number().int().min(100).default(6_000).describe('how long a mesh session lease lasts without renewal, ms'),
    meshLeaseRenewMs: z
      .number()
      .int()
      .min(20)
      .default(2_000)
      .describe('how often an owner renews its session leases, ms; at most half of meshLeaseTtlMs'),
    // The durable backstop when an archive broadcast is lost: every node re-reads the community list this often.
    revalidateSeconds: z
      .number()
      .default(30)
      .transform((s) => Math.min(300, Math.max(1, Math.round(s))))
      .describe('how often a node re-reads the community list (archived ones are closed, new ones served); clamped to 1-300'),
    // A removed member keeps receiving a private channel on a node that missed the invalidation broadcast for
    // at most this long (and a blocked address may open a socket there); every membership or block-list read
    // within it costs nothing. 5 s: a chat message or two, at worst.
    accessCacheTtlMs: z
      .number()
      .int()
      .min(0)
      .max(60_000)
      .default(5_000)
      .describe(
        'how long a channel-membership or community-membership answer, or a community blocked-IP list, is reused (0 = never); bounds a lost invalidation, ms',
      ),
    // A database or Redis started beside the relay (one systemd target, one compose file) may take a few
    // seconds to answer; half a minute covers a cold PostgreSQL start without hiding a wrong URL for long.
    startupTimeoutSeconds: z
      .number()
      .positive()
      .default(30)
      .describe('how long start-up retries an unreachable PostgreSQL or Redis before the process exits non-zero, seconds'),
    logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info').describe('pino log level'),
    relayName: z.string().default('Apiary').describe('NIP-11 name, unless the community sets its own'),
    relayDescription: z.string().default('A Nostr relay for communities of people and AI agents').describe('NIP-11 description'),
    relayContact: z
      .string()
      .default('')
      .describe('NIP-11 contact: an administrative alternate contact, a URI (mailto:, https:); empty = omitted'),
    relayContactPubkey: hex64OrEmpty
      .default('')
      .describe("NIP-11 pubkey: the administrative contact's pubkey, hex; empty = the community's own key, as in NIP-11 self"),
    relaySecretKey: hex64OrEmpty.default('').describe('relay secret key, hex; empty = generate on first start into <dataDir>/relay.key'),
    // The agent client's gradient, heartbeat 15 s / lease 45 s / session 90 s. Presence (the lease)
    // lives 3 heartbeats, so two lost heartbeats in a row don't show someone offline. Decimals allow sub-second tests.
    presenceHeartbeatSeconds: z
      .number()
      .positive()
      .default(15)
      .describe('expected interval of kind 20001 presence heartbeats; a presence (an agent lease) expires after 3 of them, seconds'),
    // The agent registry's sweep (docs/agent-registry.md): a departure is heard within one sweep of the lease's
    // end; each sweep is one presence read per 500 tracked agents. Decimals allow short tests.
    leaseSweepSeconds: z
      .number()
      .positive()
      .default(30)
      .describe(
        'how often the agent registry of each community looks for agents whose lease lapsed (a kind 21990 "expired" is then sent), seconds',
      ),
    // Each community's scan of its agent connections (docs/agent-registry.md#agent-connection-states): a state
    // shown is at most one scan stale, and a ZOMBIE is reaped within one scan of its session timeout.
    agentOrphanScanSeconds: z
      .number()
      .positive()
      .default(30)
      .describe('how often each community moves its agent connections along (SUSPECT, ZOMBIE) and reaps the dead, seconds'),
    // Lease + this (105 s) outlasts the agent client's own session (90 s), so a client that is only slow gives up
    // and reconnects first; a socket silent that long holds subscriptions and a routing entry for nobody.
    agentSessionTimeoutSeconds: z
      .number()
      .positive()
      .default(60)
      .describe('how long an agent connection may stay open past its lapsed lease without a heartbeat before it is closed, seconds'),
    authRequired: z.stringbool().or(z.boolean()).default(false).describe('require NIP-42 AUTH before any REQ/EVENT'),
    trustForwardedProto: z
      .stringbool()
      .or(z.boolean())
      .default(false)
      .describe(
        'trust X-Forwarded-Proto/Host from a TLS proxy for the NIP-42 relay URL; once trustedProxies is set, only from those peers',
      ),
    // Empty: the socket's peer is the client, and a client-sent X-Forwarded-For changes nothing.
    trustedProxies: z
      .array(z.string().refine((s) => parseAddressRange(s).ok, { message: 'not an IP address or CIDR range' }))
      .default([])
      .describe(
        'reverse proxies (IPs and CIDR ranges, IPv4 and IPv6; JSON in env) whose X-Forwarded-For names the client: the right-most hop that is not one of them',
      ),
    // RFC 6177: a subscriber gets a /64 (or more), so per address an IPv6 client would hold 2^64 budgets.
    ipv6PrefixLength: z
      .number()
      .int()
      .min(1)
      .max(128)
      .default(64)
      .describe(
        'IPv6 clients are one principal per network of this many leading bits (per-IP rates, connection caps, NIP-86 budget, blockip); 128 = per address. IPv4 is per address',
      ),
    // NIP-86 callers allowed to manage every community on this node; the relay's own key always is one.
    operatorPubkeys: z
      .array(hex64)
      .default([])
      .describe('NIP-86 operators: hex pubkeys allowed to call management methods (JSON in env); the relay key is always one'),
    verifyThreads: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(Math.max(1, Math.min(cpus().length, 4)))
      .describe('signature-verification worker threads (default: cores, at most 4)'),
    // Verification is most of an event's CPU. libsecp256k1 as a native addon (bcrypto, an optional dependency
    // built at install) verifies several times faster than as WASM (tiny-secp256k1, always installed). 'auto'
    // takes the addon when it loads and logs a warning when it falls back; 'native' refuses to start without it.
    verifyBackend: z
      .enum(['auto', 'native', 'wasm'])
      .default('auto')
      .describe('Schnorr verifier: native libsecp256k1 (optional dependency bcrypto), wasm, or auto (native when it loads)'),
    // How much the worker threads yield to the event loop when the cores are all busy (nice steps, Linux only;
    // elsewhere setpriority would renice the whole process). The event loop holds every connection, so its
    // lateness is every client's latency, while workers do bulk work that can wait a few ms. On 2 busy cores
    // (ingest with REQ readers) these values cut the loop's delay tail, at the price of fewer REQs answered
    // (reads yield to writes); readers at 5 instead of 10 served more REQs but took a share of the ingest.
    threads: z
      .object({
        writePathNice: z
          .number()
          .int()
          .min(0)
          .max(19)
          .default(5)
          .describe("added to the nice value of the verifier threads and the SQLite writer thread; 0 keeps the event loop's"),
        readNice: z
          .number()
          .int()
          .min(0)
          .max(19)
          .default(10)
          .describe('added to the nice value of the SQLite read workers and WAL checkpoint thread: reads yield to writes'),
      })
      .prefault({}),
    limits,
    rateLimits: z
      .object({
        human: tier(10, 50, 20, 100, 2, 20, 'human'),
        agentStandard: tier(20, 100, 20, 100, 5, 50, 'agent-standard'),
        agentElevated: tier(100, 500, 50, 200, 10, 100, 'agent-elevated'),
        agentPlatform: tier(1_000, 5_000, 200, 1_000, 50, 200, 'agent-platform'),
        // A page reload opens a handful of sockets at once; NATs put many people behind one IP.
        connectionsPerIp: rule(10, 100, 'new connections per IP'),
        // Charged before the NIP-98 signature is checked, so forgeries can't spend the verifier pool EVENTs
        // need: 50/s with a burst of 200 is the agent-platform tier's own api budget (the largest one), so one
        // legitimate caller of any tier never meets it, while one IP gets only a small share of the pool once
        // its burst is spent.
        apiPerIp: rule(50, 200, 'NIP-86 calls per IP, charged before the signature is checked'),
        // Every AUTH costs a signature check and may bring a new key's budget: twice the connection burst lets a
        // NAT's reconnect storm authenticate an agent and its owner on each socket, not mint keys by the hundred.
        authPerIp: rule(20, 200, 'AUTH messages per IP, across the communities of one node, charged before the signature is checked'),
        // A key nobody in the community knows (no member, admin, roster entry or known owner) may be one of
        // many minted by one client: for this long after its AUTH its EVENTs also spend its IP's budget, so
        // fresh keys write no more than an unauthenticated client from that IP could. A minute covers a
        // newcomer's first posts; NAT neighbours share the IP's budget only for that minute.
        freshKeySeconds: z
          .number()
          .nonnegative()
          .default(60)
          .describe(
            "how long after its AUTH an unknown key's EVENTs are charged to its IP's budget as well as its own, seconds (0 = never)",
          ),
      })
      .prefault({}),
    timeouts: z
      .object({
        // NIP-01 says nothing; 30 s keeps NAT mappings and proxies (typ. 60 s idle) alive.
        pingIntervalMs: z
          .number()
          .int()
          .positive()
          .default(30_000)
          .describe('WebSocket ping interval; a missed pong closes the connection'),
        // An unauthenticated socket with no subscriptions that stays silent this long holds memory for nothing.
        idleUnauthenticatedMs: z
          .number()
          .int()
          .positive()
          .default(300_000)
          .describe('close a connection that sent nothing and never authenticated'),
        authWindowSeconds: z.number().int().positive().default(600).describe('NIP-42: AUTH event created_at must be within ± this'),
        // A real client sends its request headers in one packet: 10 s is generous for a mobile link's round
        // trips, while node's own 60 s (checked every 30 s) let slow-header senders park a socket 90 s each.
        headersTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(10_000)
          .describe('HTTP request headers (a WebSocket upgrade included) must arrive within this; the socket is closed otherwise'),
        // NIP-86 bodies are at most 64 KiB; 30 s carries them over a slow link, unlike node's default of 300 s.
        requestTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(30_000)
          .describe(
            'a whole HTTP request (headers and body) must arrive within this, and an upgrade be admitted; at least headersTimeoutMs',
          ),
      })
      .prefault({}),
    store: z
      .object({
        // 500 events per transaction keep one commit short, so nothing waiting on it stalls long.
        groupCommitMaxEvents: z.number().int().positive().default(500).describe('events per write transaction at most'),
        // Only while writes keep arriving (an idle relay commits on the next turn): at 5k events/s, 10 ms
        // gathers 50 per commit, and a commit's cost per event falls as it grows (bench `store`).
        groupCommitMaxDelayMs: z
          .number()
          .int()
          .nonnegative()
          .default(10)
          .describe('longest a write waits for others to share its commit, while more keep arriving'),
        // Two readers keep a heavy REQ or COUNT off the event loop while a second one still gets served; each
        // is a thread with its own connection and page cache (~16 MB at most). SQLite only: PostgreSQL
        // queries are already asynchronous.
        readWorkers: z
          .number()
          .int()
          .min(0)
          .max(64)
          .default(2)
          .describe('SQLite read worker threads; 0 reads on the main thread (an in-memory database always does)'),
        // A read handed to a worker costs a message each way, a wake-up and a copy of its page: for an id
        // lookup or an author's latest page that is most of its cost (bench `req`, readWorkers 0 against 2).
        // 500 rows is one page at limits.maxLimit through an index; the event loop also gives the reads it
        // tries at most 2 ms a turn, so a costly one moves out early.
        inlineReadMaxRows: z
          .number()
          .int()
          .min(0)
          .default(500)
          .describe(
            'SQLite with read workers: rows a read may examine on the main thread before it moves to a worker (2 ms a turn of the event loop at most); 0 sends every read to the workers',
          ),
        // The batch transactions run on a thread with its own connection, so a commit never holds the event
        // loop; false commits on the main thread (for a platform where worker threads misbehave).
        writerThread: z
          .stringbool()
          .or(z.boolean())
          .default(true)
          .describe('SQLite: commit writes on a writer thread; false commits on the main thread'),
        // Group commit already shares one write among a batch, but an fsync per commit still costs ingest rate
        // (docs/performance.md), and a process crash is the failure most relays meet, so 'process' by default.
        // PostgreSQL is left to its server: with synchronous_commit on (its default) it already gives 'power';
        // 'off' would lose commits to a crash of the database server itself, more than 'process' allows.
        durability: z
          .enum(['process', 'power'])
          .default('process')
          .describe(
            "what an acknowledged write survives on SQLite: 'process' a crash of the relay process (synchronous=NORMAL), 'power' also a power loss or OS crash (synchronous=FULL, an fsync at every commit); PostgreSQL ignores it: its server's synchronous_commit decides, and on, its default, is 'power'",
          ),
        // The backstop behind limits.readBudgetMs (which stops a read cleanly at its next row, and refuses one
        // that spent it waiting): a SQLite reader still inside one read after 5 s is stuck between rows, and is
        // terminated rather than waited out.
        queryTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(5_000)
          .describe(
            "SQLite: the backstop that terminates a reader stuck in one read, ms; above limits.readBudgetMs, which bounds a read's wait for a worker",
          ),
        // Reads get connections of their own, so a commit never queues behind them; four keep several slow
        // reads apart while the commit pool (10) still holds most of what a server's max_connections allows.
        postgresReadPoolSize: z
          .number()
          .int()
          .min(1)
          .max(64)
          .default(4)
          .describe('PostgreSQL connections for REQ/COUNT reads, apart from those that commit writes'),
      })
      .prefault({}),
    channels: z
      .object({
        // NIP-29: a `previous` reference names "any event in the last 50 events seen by the user in the relay".
        // A client picks among what it saw; while it writes, others may post, so one of its oldest references
        // may have slid past 50 here: raise this for channels that busy (it is one read of this many ids).
        timelineWindowEvents: z
          .number()
          .int()
          .min(1)
          .max(500)
          .default(50)
          .describe('how many of a channel\'s latest events a `previous` reference may name; an unknown one is refused "invalid:"'),
        // relay29's window: a moderation event is signed by a click and sent at once; one older than a minute
        // is a replay (from another relay hosting a fork of the group, or held back) acting for someone now.
        maxModerationAgeSeconds: z
          .number()
          .int()
          .min(1)
          .default(60)
          .describe('how old a NIP-29 channel change (kinds 9000-9022, join and leave included) may be when it arrives, seconds'),
        // NIP-29 asks relays to refuse messages "with a timestamp from days or even hours ago". An agent's offline
        // queue sent after a reconnect is minutes old; one hour lets it through and refuses what the NIP names.
        maxPostAgeSeconds: z
          .number()
          .int()
          .nonnegative()
          .default(3_600)
          .describe('how old any other event sent to a channel (h tag) may be when it arrives, seconds; 0 = only the created_at window'),
      })
      .prefault({}),
    jobs: z
      .object({
        // the issue of a fleet that stopped: a queue that grows without bound hides it until memory runs out;
        // a full queue answers "rate-limited:" so requesters back off and the operator sees it at once
        maxQueuedPerCapability: z
          .number()
          .int()
          .min(1)
          .default(10_000)
          .describe('open dispatched jobs of one capability in one community; one more is refused "rate-limited:"'),
        // each capability with open jobs is a dispatcher with a queue and a timer: a requester naming a new one in
        // every request must not make them without end
        maxCapabilitiesPerCommunity: z
          .number()
          .int()
          .min(1)
          .default(256)
          .describe('capabilities with open dispatched jobs in one community; a request for one more is refused "rate-limited:"'),
        // one requester must not fill a capability's whole queue: others' jobs would be refused behind it
        maxOpenPerRequester: z
          .number()
          .int()
          .min(1)
          .default(1_000)
          .describe('open dispatched jobs of one requester in one community; one more is refused "rate-limited:"'),
        // an agent that is alive answers its assignment within a round trip; one that does not within 5 s is
        // stuck (or was chosen the moment it froze), and the job should not wait on it for a whole lease
        acceptTimeoutMs: z
          .number()
          .int()
          .min(100)
          .default(5_000)
          .describe('how long an agent has to accept an assignment (its "processing" feedback) before the job goes to another, ms'),
        maxAttempts: z
          .number()
          .int()
          .min(1)
          .max(100)
          .default(5)
          .describe('assignments of one job (first and again) before it ends with the relay\'s error "exhausted"'),
        // the assignment carries the whole request to the agent; results are bounded by limits.maxEventBytes
        maxRequestBytes: z
          .number()
          .int()
          .min(1_024)
          .default(65_536)
          .describe('largest dispatched job request (its serialized event), bytes; a larger one is refused "invalid:"'),
        maxDeadlineMs: z.number().int().min(1_000).default(86_400_000).describe('longest deadline_ms a request may ask for, ms'),
      })
      .prefault({}),
    console: z
      .object({
        enabled: z.stringbool().or(z.boolean()).default(true).describe('serve the operator console at /console; false answers 404 there'),
        // An operator's view, not a workspace: half an hour covers an incident, and a cookie left in a browser
        // stops working soon after. Sessions are never extended; signing in again is one click or one command.
        sessionTtlSeconds: z
          .number()
          .int()
          .min(60)
          .max(86_400)
          .default(1_800)
          .describe('how long a console sign-in lasts, seconds (the cookie and the session behind it)'),
        // every node publishes its figures this often and a node is shown gone after three missed publications;
        // 2 s keeps the console's header live, one status per node each time, and 10 minutes of chart points
        statusIntervalMs: z
          .number()
          .int()
          .min(250)
          .max(60_000)
          .default(2_000)
          .describe('how often each node publishes its status to the console status board, in ms'),
      })
      .prefault({}),
    communities: z
      .array(
        z.object({
          id: z.string().regex(COMMUNITY_ID_PATTERN),
          name: z.string().optional(),
          hosts: z.array(z.string()).min(1),
          agents: z.array(z.object({ pubkey: hex64, tier: z.enum(['standard', 'elevated', 'platform']) })).default([]),
          // NIP-86 callers for this community only (bans, agent tiers); operators manage every community
          admins: z.array(hex64).default([]),
          // a community moved here keeps the identity its group addresses (naddr) name; empty = derived from the relay key
          secretKey: hex64OrEmpty.default(''),
        }),
      )
      .default([])
      .describe('communities from the config file, added to those in the database (JSON in env)'),
  })
  .superRefine((c, ctx) => {
    // node refuses to start an HTTP server whose headers may take longer than the whole request
    if (c.timeouts.headersTimeoutMs > c.timeouts.requestTimeoutMs) {
      ctx.addIssue({ code: 'custom', path: ['timeouts', 'requestTimeoutMs'], message: 'must be at least timeouts.headersTimeoutMs' })
    }
    // a read must meet its budget (a clean CLOSED) before the backstop terminates its reader
    if (c.limits.readBudgetMs >= c.store.queryTimeoutMs) {
      ctx.addIssue({ code: 'custom', path: ['limits', 'readBudgetMs'], message: 'must be below store.queryTimeoutMs' })
    }
    if (c.mesh === 'on' && !(c.redisUrl && c.databaseUrl)) {
      ctx.addIssue({ code: 'custom', path: ['mesh'], message: 'mesh "on" needs cluster mode: set redisUrl and databaseUrl' })
    }
    if ((c.meshTlsCertFile === '') !== (c.meshTlsKeyFile === '')) {
      ctx.addIssue({
        code: 'custom',
        path: [c.meshTlsCertFile === '' ? 'meshTlsCertFile' : 'meshTlsKeyFile'],
        message: 'meshTlsCertFile and meshTlsKeyFile go together: set both to serve the mesh port over TLS, or neither',
      })
    }
    if (c.meshLeaseRenewMs * 2 > c.meshLeaseTtlMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['meshLeaseRenewMs'],
        message: 'must be at most half of meshLeaseTtlMs, so one failed renewal never loses the lease',
      })
    }
  })

export type { Config, ConfigInput } from './config-types.js'

// The published types are written out (config-types.ts); these stop the build when they and the schema differ.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const _typesMatchSchema: [Same<Config, z.output<typeof configSchema>>, Same<ConfigInput, z.input<typeof configSchema>>] = [true, true]

const toEnvName = (path: string[]) => 'APIARY_' + path.map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_')

/** Every leaf setting with its env name, from the defaults (used by loadConfig and the README table). */
export function listSettings(): { path: string[]; env: string; defaultValue: unknown }[] {
  const out: { path: string[]; env: string; defaultValue: unknown }[] = []
  const walk = (v: unknown, path: string[]) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      for (const [k, child] of Object.entries(v)) walk(child, [...path, k])
    } else out.push({ path, env: toEnvName(path), defaultValue: v })
  }
  walk(configSchema.parse({}), [])
  return out
}
