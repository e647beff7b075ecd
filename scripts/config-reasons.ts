// Why each non-obvious default is what it is, in words for operators: docs/configuration.md shows these beside the
// schema's own descriptions (`npm run docs`). Keys are setting paths; `*` stands for one path segment.
export const CONFIG_REASONS: Record<string, string> = {
  host: 'Loopback, so a first start exposes nothing: put a reverse proxy in front, or bind another address on purpose.',
  relaySecretKey: 'Every node of a cluster must have the same key: nodes verify each other’s control messages with it.',
  redisUrl: 'Both URLs set: this node joins the cluster; both empty: the embedded default; one without the other is refused at start.',
  databaseUrl: 'Both URLs set: this node joins the cluster; both empty: the embedded default; one without the other is refused at start.',
  mesh: 'An embedded relay has one node, and a cluster without the mesh keeps each community’s actor as the owner of its channels.',
  meshAdvertisedAddress: 'Behind NAT or in containers the bound address is not the one peers can dial.',
  meshHellosPerIpPerSecond:
    'Peers dial each other a few times a minute and redial from 500 ms on: a burst of 20 covers a node relinking to a dozen peers behind one address, while a stranger’s flood is dropped unread.',
  meshTlsCertFile:
    'Off by default: every frame after the Hello is already sealed (ChaCha20-Poly1305); TLS also hides the Hello and frame headers, for operators who want it. Certificate and key both or neither (checked at start).',
  meshTlsCaFile: 'Empty trusts the system CAs; a cluster with its own CA names it here, and every node needs it to dial a wss:// peer.',
  meshLeaseTtlMs:
    'Renewed every 2 s, a 6 s lease survives two failed renewals in a row before its owner stops; a dead owner’s channels are taken over within about the lease and a second (Kubernetes leader election and Orleans wait about 15 s).',
  meshLeaseRenewMs: 'At most half the lease, so one failed renewal never loses it (checked at start).',
  revalidateSeconds:
    'The durable backstop when a broadcast is lost (an archived community, a new host): every node re-reads the community list this often.',
  accessCacheTtlMs:
    'A removed member keeps receiving a private channel on a node that missed the invalidation broadcast for at most this long (and an address just blocked may still open a socket there), while every membership or block-list read within it costs nothing: a chat message or two, at worst.',
  startupTimeoutSeconds:
    'A database or Redis started beside the relay (one systemd target, one compose file) may take a few seconds to answer; half a minute covers a cold PostgreSQL start without hiding a wrong URL for long.',
  presenceHeartbeatSeconds:
    'The agent client’s gradient is heartbeat 15 s, lease 45 s, session 90 s: a presence lives three heartbeats, so two lost in a row don’t show someone offline.',
  leaseSweepSeconds:
    'A departure (kind 21990 "expired") is heard within one sweep of the lease’s end; each sweep reads the presence of every agent the community tracks.',
  agentOrphanScanSeconds:
    'The registry’s sweep runs as often: an agent’s state is at most one scan stale, and each scan looks at every agent connection of the community once.',
  agentSessionTimeoutSeconds:
    'The agent client gives up on a session 90 s after its last heartbeat (lease 45 s + 45 s); the relay waits a little longer, so a client that is only slow reconnects on its own before the relay closes it.',
  trustedProxies: 'Empty: the socket’s peer is the client, and an X-Forwarded-For a client sends changes nothing.',
  verifyBackend:
    'Verification is most of an event’s CPU, and the native addon (libsecp256k1 built at install by the optional dependency bcrypto) is several times faster than the WASM build every install has. `auto` takes the addon when it loads and logs a warning when it falls back; `native` refuses to start without it.',
  'threads.writePathNice':
    'The event loop holds every connection, so its lateness is every client’s latency, while worker threads do bulk work that can wait a few milliseconds. Linux only (elsewhere a thread’s priority is the whole process’s); 0 for both when the relay has its cores to itself.',
  'jobs.maxQueuedPerCapability':
    'A queue that grows without bound hides a fleet that stopped until memory runs out; a full one answers "rate-limited:" so requesters back off, and the operator sees it at once.',
  'jobs.acceptTimeoutMs':
    'A live agent accepts within a round trip; one that does not within 5 s is stuck or froze as it was chosen, and the job should not wait a whole lease for it.',
  'console.statusIntervalMs':
    'A console shows each node within one interval and calls it gone after three missed, so 6 s; each publication is one status per node (a few kilobytes; tens with full hot-connection and supervision lists), whether or not anyone looks.',
  'threads.readNice': 'Reads yield to writes, and both to the event loop, when every core is busy. Linux only.',
  'limits.maxMessageBytes': 'strfry’s default (maxWebsocketPayloadSize); the kind 3 contact lists of heavy users reach about 100 KB.',
  'limits.maxSubscriptions':
    'strfry allows 20 per connection; agents multiplex many channels on one connection. A client opening all its subscriptions at once has that many reads waiting at most, so a waiting bound per connection refuses only a socket that outruns its own reads, never a reconnect storm of many sockets.',
  'limits.maxReqValues':
    'A heavy user’s follow list (about 2,000 `p` tags) plus a few kinds fits in one REQ; each value is one index range read, and the read budget bounds what they read together.',
  'limits.maxRowsExamined':
    'A REQ page is at most 10 filters × 500 rows and an honest read examines a few times its page; 100,000 candidate rows take a reader about 50-100 ms, so workers stay free for other communities.',
  'limits.readBudgetMs':
    'An honest read answers in milliseconds; a read still running after 2 s is a scan (a COUNT without a limit, a tag filter over a whole range) holding a reader from everyone else. It stays below `store.queryTimeoutMs`, the backstop that terminates a SQLite reader stuck between two rows; on PostgreSQL the server stops it too (statement_timeout).',
  'limits.maxSubidLength': 'NIP-01 asks for short subscription ids; 64 fits any UUID or hex id a client makes.',
  'limits.maxEventTags': 'The kind 3 contact lists of heavy users reach about 2,000 `p` tags.',
  'limits.createdAtPastSeconds': 'One year back keeps imports of older notes working.',
  'limits.createdAtFutureSeconds': 'Fifteen minutes ahead tolerates skewed phone clocks.',
  'limits.maxPendingOutboundBytes':
    'About 8× the largest REQ page (500 events of about 1 KB); a reader that lags further is a slow consumer.',
  'limits.maxInboundBytesInFlight':
    'Eight frames of the largest size, or about 2,500 typical events pipelined by one client: enough to keep the verifiers busy, while 1,000 connections flooding at once hold at most about 1 GiB.',
  'limits.slowConsumerGraceMs': 'A healthy reader on a slow mobile link drains a 4 MiB page in a few seconds; one that can’t is stuck.',
  ipv6PrefixLength:
    'A subscriber is handed a whole /64 or more (RFC 6177): keyed per address, one IPv6 client would hold 2^64 budgets, socket caps and blocks to spend.',
  'limits.maxConnectionsPerIp':
    'Twice the per-IP connection burst: a page reload’s handful of sockets times the dozens of people an office or carrier NAT puts behind one address fits; one host parking thousands of idle sockets does not. Behind a proxy it means something only with trustedProxies set.',
  'limits.maxPendingUpgradesPerIp':
    'A browser opens a handful of sockets at once and each completes its handshake in one round trip; a NAT of many users rarely has dozens mid-handshake together. A slow-header sender holds each socket until headersTimeoutMs: this stops one address holding hundreds.',
  'limits.maxConcurrentAuth':
    'A reconnect storm (thousands of agents after a restart) must spread out rather than queue without bound; past it an AUTH is answered `rate-limited:` with a jittered 1–5 s retry.',
  'limits.maxPubkeysPerConnection':
    'NIP-42 lets one socket hold several identities: an agent, its owner and a spare fit in 4, while each more key would be another budget for one socket to spend.',
  'rateLimits.*.events.*': 'Humans type; agents are programs and get more, by tier. Generous, so that normal clients never notice.',
  'rateLimits.*.reqs.burst':
    'A client opening its subscriptions at start-up (a feed, notifications, DMs, profiles) sends dozens of REQs at once: the burst lets it in.',
  'rateLimits.*.api.*':
    'NIP-86 calls are moderation by hand or by a bot: an admin page loading its lists sends a few at once, a clean-up script bans in batches (the burst). Each call is a signature check, store writes and, for settings, a reconcile on every node, so the sustained rate stays far below events’.',
  'rateLimits.connectionsPerIp.*': 'A page reload opens a handful of sockets at once; NATs put many people behind one IP.',
  'rateLimits.apiPerIp.*':
    'Charged before the NIP-98 signature is checked, so forged calls can’t spend the verifier threads that EVENTs need. It is the agent-platform tier’s own NIP-86 budget, the largest, so one legitimate caller of any tier never meets it.',
  'rateLimits.authPerIp.*':
    'Every AUTH costs a signature check and may bring a new key’s budget: twice the connection burst lets a NAT’s reconnect storm authenticate an agent and its owner on each socket, not mint keys by the hundred. Global per node, so addressing several communities does not multiply it.',
  'rateLimits.freshKeySeconds':
    'A key nobody in the community knows (not an admin, on the roster or the allowed list, nor attested by one) may be one of many minted by one client: for this long its EVENTs also spend its IP’s budget, so fresh keys write no more than an unauthenticated client from that IP could. A minute covers a newcomer’s first posts; neighbours behind one NAT share the IP’s budget only for that minute.',
  'console.sessionTtlSeconds':
    'An operator’s view, not a workspace: half an hour covers an incident, and a cookie left in a browser stops working soon after. Sessions are never extended.',
  'timeouts.pingIntervalMs': 'NIP-01 says nothing; 30 s keeps NAT mappings and proxies (typically 60 s idle) alive.',
  'timeouts.headersTimeoutMs':
    'A real client sends its request headers in one packet: 10 s is generous for a mobile link, while node’s own 60 s, checked every 30 s, let slow-header senders hold a socket up to 90 s each.',
  'timeouts.requestTimeoutMs': 'NIP-86 bodies are at most 64 KiB: 30 s carries one over a slow link, where node’s default is 300 s.',
  'timeouts.idleUnauthenticatedMs': 'An unauthenticated socket with no subscriptions that stays silent this long holds memory for nothing.',
  'store.groupCommitMaxEvents': 'Bounds one commit, so the writer (and on PostgreSQL the round trip) never holds a batch long.',
  'store.groupCommitMaxDelayMs':
    'Only while writes keep arriving (an idle relay commits at once): a few milliseconds gather dozens of events per commit under load, and a commit costs mostly per commit, not per event.',
  'store.readWorkers':
    'Two readers keep a heavy REQ or COUNT off the event loop while a second one is still served; each is a thread with its own connection and page cache (at most about 16 MB). SQLite only: PostgreSQL queries are asynchronous already.',
  'store.inlineReadMaxRows':
    'A read handed to a worker costs a message each way, a wake-up and a copy of its page: for an id lookup or an author’s latest page that is most of its cost. 500 rows is one page at `limits.maxLimit` through an index; the event loop gives such reads at most 2 ms a turn, so a costly one moves to a worker early.',
  'store.writerThread':
    'On its own thread a commit never holds the event loop; false commits on the main thread, for a platform where worker threads misbehave.',
  'store.durability':
    'A crash of the relay process is the failure most relays meet: `process` survives it while group commit keeps ingest fast, and `power` adds an fsync to every commit, on a disk that honours fsync (its cost in ingest rate: [performance.md](performance.md)). The relay leaves PostgreSQL’s `synchronous_commit` alone: off would lose commits to a crash of the database server itself.',
  'store.postgresReadPoolSize':
    'Reads get connections of their own, so a commit never queues behind them; four keep several slow reads apart while the commit pool (10) keeps most of what the server’s max_connections allows.',
  'store.queryTimeoutMs':
    'The backstop behind `limits.readBudgetMs`, which stops a read cleanly at its next row: a SQLite reader still inside one read after 5 s is stuck between rows, and is terminated rather than waited out.',
  'channels.timelineWindowEvents':
    'NIP-29’s figure: a reference names "any event in the last 50 events seen by the user in the relay". A client picks among what it saw, and others posting while it writes push its oldest references along: raise it for channels that busy. Each write with references costs one read of this many ids per channel and turn.',
  'channels.maxModerationAgeSeconds':
    'relay29’s window. A channel change is signed when someone acts and sent at once; one older than a minute is a replay (from a relay hosting a fork of the channel, or held back) acting for them now. Join and leave requests change who is in the channel as a 9000 or 9001 does, so they are held to it too.',
  'channels.maxPostAgeSeconds':
    'NIP-29 asks relays to refuse messages "with a timestamp from days or even hours ago". An agent’s offline queue, sent after a reconnect, is minutes old: an hour lets it through and refuses what the NIP names. 0 for a channel moved here with its history.',
}
