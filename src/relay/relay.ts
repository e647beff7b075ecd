// The composition root (docs/architecture.md §2): the only place that wires infra into actors. createRelay
// builds the kernel and the metrics; listen() starts the node (node.ts); the rest is the embedding API.
import type { Observable } from 'rxjs'
import { communityPath } from '../actors/community/community-actor.js'
import type { CommunityMsg, CommunityStats, PublishOutcome } from '../actors/community/messages.js'
import { ask, createKernel, type Kernel, type SupervisionEvent, type TypedRef, tell } from '../actors/kernel/index.js'
import type { CommunityKeys } from '../infra/community-key.js'
import type { Config, ConfigInput } from '../infra/config-types.js'
import type { ConsoleSource } from '../infra/http/console/console-source.js'
import { Tenants } from '../infra/http/tenants.js'
import { loadConfig } from '../infra/load-config.js'
import { createLogger, type Logger } from '../infra/log.js'
import { createMetrics } from '../infra/metrics.js'
import { signAsRelay } from '../infra/relay-key.js'
import type { CommunityStore } from '../infra/store/community-store.js'
import type { EventStore } from '../infra/store/event-store.js'
import { asVerified, type NostrEvent } from '../protocols/nip01/event.js'
import type { EventTemplate } from '../protocols/nip01/sign.js'
import { checkHostEvent } from './host-event.js'
import type { HostMsg } from './host-messages.js'
import { type RunningNode, startNode } from './node.js'
import { RelayError } from './relay-error.js'
import { logSupervision } from './supervision-log.js'

export { DEFAULT_COMMUNITY } from '../infra/store/community-store.js'
export { SUPPORTED_NIPS } from './relay-info.js'

/**
 * A relay node inside a host program. Its methods fail with coded errors: RelayError (RelayErrorCode) for
 * the relay's own state, and the codes of what they wait on (the kernel's APIARY_ASK_TIMEOUT and the like,
 * a backend's at start-up).
 */
export interface Relay {
  readonly config: Config
  /** ws://host:port once listening */
  readonly url: string
  /** the relay key's pubkey: the key of the node and its cluster (NIP-98 operator calls, the mesh, control payloads) */
  readonly pubkey: string
  readonly supervision$: Observable<SupervisionEvent>
  /**
   * Opens the backends (retrying an unreachable PostgreSQL or Redis for `startupTimeoutSeconds`), then
   * listens. Rejects, with everything it opened closed again, when it can't (BackendUnavailableError names
   * the backend and the cause); APIARY_RELAY_CLOSED once closed.
   */
  listen(): Promise<string>
  /** graceful: stop accepting, close sockets with 1001, flush pending commits */
  close(): Promise<void>
  communityIds(): string[]
  /** the community's actor, for the messages a host may send it; undefined when it is not served here */
  community(id: string): TypedRef<HostMsg> | undefined
  /**
   * The key the relay signs for `communityId` with (its group state, `publish`): NIP-11 `self` on its hosts.
   * Derived from the relay key unless the config names one; APIARY_RELAY_NOT_LISTENING before the first listen().
   */
  communityPubkey(communityId: string): string
  /** sign `template` with the community's key (communityPubkey) and publish it in `communityId` (stored, fanned out) */
  publish(communityId: string, template: EventTemplate): Promise<PublishOutcome>
  /**
   * Publish an event signed with another key once it passes the checks of a client's EVENT that keep stored
   * events valid (shape, limits, created_at window, id, signature); one that fails them is answered
   * `{ accepted: false, message: 'invalid: ...' }`. The host is trusted as with publish: no rate limit or membership.
   */
  publishSigned(communityId: string, event: NostrEvent): Promise<PublishOutcome>
  stats(communityId: string): Promise<CommunityStats>
  /** write the ban row, close the pubkey's sockets on this node and (in a cluster) on every other node */
  banPubkey(communityId: string, pubkey: string, reason: string, untilSeconds?: number): Promise<void>
  /** stop serving a community on every node: sockets closed, new connections 404; its data is kept */
  archiveCommunity(communityId: string): Promise<boolean>
}

export interface RelayOptions {
  logger?: Logger
  /** bring your own EventStore (e.g. a wrapped or instrumented one); default: SQLite in dataDir */
  eventStore?: EventStore
  /** wrap the CommunityStore the relay opens (instrumentation, fault injection); default: used as it is */
  wrapCommunityStore?: (store: CommunityStore) => CommunityStore
}

/** Checks `input` (a ConfigError, APIARY_CONFIG_INVALID, names a bad setting); opens nothing until listen(). */
export function createRelay(input: ConfigInput = {}, opts: RelayOptions = {}): Relay {
  const config = loadConfig({ overrides: input })
  const log = opts.logger ?? createLogger(config.logLevel)
  const metrics = createMetrics()
  const kernel: Kernel = createKernel()
  logSupervision(kernel.supervision$, metrics, log)
  const nowSeconds = () => Math.floor(Date.now() / 1000)
  const tenants = new Tenants([])
  let node: RunningNode | undefined
  // kept after close: a program may still want to know which key signed what this relay stored
  let pubkey = ''
  let communityKeys: CommunityKeys | undefined
  let closed = false

  const communityRef = (id: string) => kernel.lookup<CommunityMsg>(communityPath(id))
  const running = (): RunningNode => {
    if (node) return node
    throw closed
      ? new RelayError('APIARY_RELAY_CLOSED', 'relay closed')
      : new RelayError('APIARY_RELAY_NOT_LISTENING', 'relay not listening')
  }
  const servedCommunity = (id: string): TypedRef<CommunityMsg> => {
    running()
    const ref = communityRef(id)
    if (!ref) throw new RelayError('APIARY_UNKNOWN_COMMUNITY', `unknown community ${id}`)
    return ref
  }

  async function listen(): Promise<string> {
    if (node) return node.url
    if (closed) throw new RelayError('APIARY_RELAY_CLOSED', 'relay closed')
    node = await startNode({
      config,
      log,
      metrics,
      kernel,
      tenants,
      eventStore: opts.eventStore,
      wrapCommunityStore: opts.wrapCommunityStore,
      nowSeconds,
      banPubkey,
    })
    pubkey = node.key.pubkey
    communityKeys = node.communityKeys
    return node.url
  }

  async function banPubkey(communityId: string, pubkey: string, reason: string, untilSeconds?: number): Promise<void> {
    const ref = servedCommunity(communityId)
    // the row first: it is the durable truth every node checks at AUTH and at every write
    await running().backends.communities.banPubkey(communityId, pubkey, reason, untilSeconds)
    tell(ref, { type: 'DisconnectPubkey', pubkey, reason, broadcast: true })
  }

  async function publish(communityId: string, template: EventTemplate): Promise<PublishOutcome> {
    const ref = servedCommunity(communityId)
    const event = asVerified(signAsRelay(running().communityKeys.of(communityId), template, nowSeconds()))
    return ask(ref, (reply) => ({ type: 'Publish', event, raw: JSON.stringify(event), reply }), 30_000)
  }

  async function publishSigned(communityId: string, input: NostrEvent): Promise<PublishOutcome> {
    const ref = servedCommunity(communityId)
    const checked = await checkHostEvent(input, config.limits, running().verifier, nowSeconds())
    if (!checked.ok) return { accepted: false, message: checked.error }
    const { event, raw } = checked.value
    return ask(ref, (reply) => ({ type: 'Publish', event, raw, reply }), 30_000)
  }

  async function stats(communityId: string): Promise<CommunityStats> {
    const ref = servedCommunity(communityId)
    return ask(ref, (reply) => ({ type: 'Stats', reply }), 10_000)
  }

  const relay: Relay = {
    config,
    get url() {
      return node?.url ?? ''
    },
    get pubkey() {
      return pubkey
    },
    supervision$: kernel.supervision$,
    listen,
    communityPubkey(communityId) {
      if (!communityKeys) throw new RelayError('APIARY_RELAY_NOT_LISTENING', 'relay not listening')
      return communityKeys.of(communityId).pubkey
    },
    close: async () => {
      closed = true
      const n = node
      node = undefined
      await n?.close()
      await kernel.shutdown()
    },
    communityIds: () => tenants.ids(),
    community: communityRef,
    publish,
    publishSigned,
    stats,
    banPubkey,
    archiveCommunity: async (communityId) => running().communities.archive(communityId),
  }
  consoles.set(relay, () => node?.console)
  return relay
}

// Beside the embedding API rather than in it: what the operator console reads of a listening relay.
const consoles = new WeakMap<Relay, () => ConsoleSource | undefined>()

/** the console source of a listening relay (its status board, hot connections, NIP-86 on behalf of a pubkey) */
export function consoleOf(relay: Relay): ConsoleSource | undefined {
  return consoles.get(relay)?.()
}
