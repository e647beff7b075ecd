// NIP-29 moves a channel client makes: each sends one signed event and resolves with the relay's OK and the
// event, so a test can assert the prefix and then refer to the event by id; and reading a channel's state.
import { signOwnerAttestation } from '../../src/protocols/nip-oa'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { prefixOf } from '../../src/protocols/reasons'
import { type SignedEvent, signEvent, type TestKeys } from './events'
import { challengeOf, fresh, newSubId, type Ok, publish, reqEvents } from './relay-client'
import type { TestClient } from './ws-client'

export type ChannelFlag = 'private' | 'public' | 'restricted' | 'unrestricted' | 'closed' | 'open' | 'hidden' | 'visible'

export interface Sent {
  ok: Ok
  event: NostrEvent
}

export interface ChannelMeta {
  name?: string
  about?: string
  picture?: string
  banner?: string
  flags?: ChannelFlag[]
  /** the `supported_kinds` tag, when given */
  supportedKinds?: number[]
}

const metaTags = (m: ChannelMeta): string[][] => [
  ...(m.name !== undefined ? [['name', m.name]] : []),
  ...(m.about !== undefined ? [['about', m.about]] : []),
  ...(m.picture !== undefined ? [['picture', m.picture]] : []),
  ...(m.banner !== undefined ? [['banner', m.banner]] : []),
  ...(m.flags ?? []).map((f) => [f]),
  ...(m.supportedKinds !== undefined ? [['supported_kinds', ...m.supportedKinds.map(String)]] : []),
]

async function send(c: TestClient, e: SignedEvent): Promise<Sent> {
  return { ok: await publish(c, e), event: e.event }
}

/** Any event addressed to `channel` (one `h` tag first, then `tags`). */
export const channelEvent = (c: TestClient, keys: TestKeys, channel: string, kind: number, tags: string[][] = [], created_at?: number) =>
  send(c, fresh(keys, { kind, tags: [['h', channel], ...tags], created_at }))

/** kind 9007: create `channel` with `keys` as its admin. */
export const createChannel = (c: TestClient, keys: TestKeys, channel: string, meta: ChannelMeta = {}) =>
  channelEvent(c, keys, channel, 9007, metaTags(meta))

/** kind 9: a chat message to `channel`. */
export const post = (c: TestClient, keys: TestKeys, channel: string, created_at?: number) =>
  channelEvent(c, keys, channel, 9, [], created_at)

/** kind 9000: put `pubkey` in `channel` with `roles` (none: a plain member). */
export const putUser = (c: TestClient, keys: TestKeys, channel: string, pubkey: string, roles: string | string[] = []) =>
  channelEvent(c, keys, channel, 9000, [['p', pubkey, ...(typeof roles === 'string' ? [roles] : roles)]])

/** kind 9001: remove `pubkey` from `channel`. */
export const removeUser = (c: TestClient, keys: TestKeys, channel: string, pubkey: string) =>
  channelEvent(c, keys, channel, 9001, [['p', pubkey]])

/** kind 9002: edit the metadata (with any flag, every flag absent is off; without, flags stay as they are). */
export const editMetadata = (c: TestClient, keys: TestKeys, channel: string, meta: ChannelMeta) =>
  channelEvent(c, keys, channel, 9002, metaTags(meta))

/** kind 9005: delete events of `channel` by id. */
export const deleteEvents = (c: TestClient, keys: TestKeys, channel: string, ids: string[]) =>
  channelEvent(
    c,
    keys,
    channel,
    9005,
    ids.map((id) => ['e', id]),
  )

/** kind 9008: delete the channel. */
export const deleteChannel = (c: TestClient, keys: TestKeys, channel: string) => channelEvent(c, keys, channel, 9008)

/** kind 9021 / 9022: join (with an invite code, if given) or leave. */
export const join = (c: TestClient, keys: TestKeys, channel: string, code?: string) =>
  channelEvent(c, keys, channel, 9021, code === undefined ? [] : [['code', code]])
export const leave = (c: TestClient, keys: TestKeys, channel: string) => channelEvent(c, keys, channel, 9022)

/** kind 9009: an invite code for `channel`; `uses` and `expiration` (unix seconds) as tags when given. */
export const createInvite = (
  c: TestClient,
  keys: TestKeys,
  channel: string,
  code: string,
  opts: { uses?: number; expiration?: number } = {},
) =>
  channelEvent(c, keys, channel, 9009, [
    ['code', code],
    ...(opts.uses !== undefined ? [['uses', String(opts.uses)]] : []),
    ...(opts.expiration !== undefined ? [['expiration', String(opts.expiration)]] : []),
  ])

/** The relay-signed state of a channel: its 39000, 39001, 39002 and 39003 (each undefined when not stored). */
export async function channelState(c: TestClient, channel: string) {
  const events = await reqEvents(c, [{ kinds: [39000, 39001, 39002, 39003], '#d': [channel] }])
  const one = (kind: number) => {
    const found = events.filter((e) => e.kind === kind)
    if (found.length > 1) throw new Error(`more than one kind ${kind} for channel ${channel}`)
    return found[0]
  }
  return { metadata: one(39000), admins: one(39001), members: one(39002), roles: one(39003) }
}

/** The first value of each tag named `name`. */
export const tagValues = (e: NostrEvent | undefined, name: string) => (e?.tags ?? []).filter((t) => t[0] === name).map((t) => t[1])

export const hasFlag = (e: NostrEvent | undefined, flag: ChannelFlag) => (e?.tags ?? []).some((t) => t.length === 1 && t[0] === flag)

/** Open a live subscription; resolves at its EOSE with the stored events. */
export async function subscribe(c: TestClient, filters: object[], subId = newSubId('live')) {
  const stored = await reqEvents(c, filters, subId)
  return { subId, stored }
}

/**
 * Whether `hiddenId` reached `subId` before `markerId` did. Waits for the marker (which the relay handles
 * after the other event), so a `false` proves non-delivery without sleeping.
 */
export async function deliveredBefore(
  c: TestClient,
  subId: string,
  hiddenId: string,
  markerId: string,
  timeoutMs = 5000,
): Promise<boolean> {
  const marker = await c.next((f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as NostrEvent).id === markerId, timeoutMs)
  const upTo = c.frames.slice(0, c.frames.indexOf(marker))
  return upTo.some((f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as NostrEvent).id === hiddenId)
}

/** Wait until `id` arrives on `subId`. */
export const delivered = (c: TestClient, subId: string, id: string, timeoutMs = 5000) =>
  c.next((f) => f[0] === 'EVENT' && f[1] === subId && (f[2] as NostrEvent).id === id, timeoutMs)

/** A NIP-42 AUTH event of `agent` carrying `owner`'s NIP-OA attestation; resolves with the OK. */
export async function authAsAgent(c: TestClient, agent: TestKeys, owner: TestKeys, relayUrl: string, conditions = ''): Promise<Ok> {
  const e = signEvent(agent, {
    kind: 22242,
    tags: [['relay', relayUrl], ['challenge', await challengeOf(c)], signOwnerAttestation(owner.secretKey, agent.pubkey, conditions)],
  })
  c.send(['AUTH', e.event])
  const f = await c.ok(e.event.id)
  return { accepted: f[2] as boolean, message: f[3] as string, prefix: prefixOf(f[3] as string) }
}

/** kind 9010: the whole pin list of `channel`, as `e` (event id) and `a` (address) tags in order. */
export const updatePins = (c: TestClient, keys: TestKeys, channel: string, pins: string[][]) => channelEvent(c, keys, channel, 9010, pins)

/** The relay's 39005 of `channel` (undefined when none is stored or this reader may not see it). */
export async function pinsOf(c: TestClient, channel: string): Promise<NostrEvent | undefined> {
  const found = await reqEvents(c, [{ kinds: [39005], '#d': [channel] }])
  if (found.length > 1) throw new Error(`more than one kind 39005 for channel ${channel}`)
  return found[0]
}

/** kind 9 to `channel` carrying `refs` as one `previous` tag (NIP-29 timeline references). */
export const postAfter = (c: TestClient, keys: TestKeys, channel: string, refs: string[], created_at?: number) =>
  channelEvent(c, keys, channel, 9, refs.length > 0 ? [['previous', ...refs]] : [], created_at)

/** The ids of the channel's latest events, newest first, as the relay orders them. */
export const latestIds = async (c: TestClient, channel: string, limit: number) =>
  (await reqEvents(c, [{ '#h': [channel], limit }])).map((e) => e.id)
