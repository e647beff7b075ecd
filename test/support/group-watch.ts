// Watching one NIP-29 group from beside a client library: a raw connection subscribed before a change, so a test
// can check that the state read at once and the state delivered live are both the new one, and that every
// relay-signed event it sees has the shape NIP-29 gives it.
import { verifyEvent } from 'nostr-tools/pure'
import { expect } from 'vitest'
import { GENERATION_TAG } from '../../src/protocols/mesh/state-generation'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { newSubId, reqEvents } from './relay-client'
import { connect, type Frame, type TestClient } from './ws-client'

/** NIP-29's relay-signed group state: the group id is the first tag, a `d`. */
export const STATE_KINDS = [39000, 39001, 39002, 39003, 39005]
const FLAGS = ['private', 'restricted', 'hidden', 'closed']
const METADATA_TAGS = ['d', 'name', 'about', 'picture', 'banner', 'supported_kinds', ...FLAGS]
const HEX64 = /^[0-9a-f]{64}$/

const tagsNamed = (e: NostrEvent, name: string) => e.tags.filter((t) => t[0] === name)

/** Asserts the NIP-29 shape of a relay-signed event of group `groupId`, signed by `self` (NIP-11). */
export function expectSpecShape(e: NostrEvent, groupId: string, self: string): void {
  expect(verifyEvent({ ...e }), `signature of kind ${e.kind}`).toBe(true)
  expect(e.pubkey, `kind ${e.kind} signed by the NIP-11 self key`).toBe(self)
  if (e.kind === 9000 || e.kind === 9001) {
    expect(tagsNamed(e, 'h')).toEqual([['h', groupId]])
    expect(tagsNamed(e, 'p').every((t) => HEX64.test(t[1] ?? ''))).toBe(true)
    return
  }
  expect(e.tags[0], `kind ${e.kind}: the d tag first`).toEqual(['d', groupId])
  // with the mesh on, an owner marks each version with its generation (docs/mesh.md §6); clients ignore it
  const rest = e.tags.slice(1).filter((t) => t[0] !== GENERATION_TAG)
  switch (e.kind) {
    case 39000:
      expect(rest.filter((t) => !METADATA_TAGS.includes(t[0] ?? '') || t[0] === 'd')).toEqual([])
      // a flag is a tag of its name alone; the words for "off" (public, open, ...) are never sent
      expect(rest.filter((t) => t.length === 1 && !FLAGS.includes(t[0] ?? ''))).toEqual([])
      expect(rest.filter((t) => FLAGS.includes(t[0] ?? '') && t.length !== 1)).toEqual([])
      return
    case 39001:
      expect(rest.filter((t) => t[0] !== 'p' || !HEX64.test(t[1] ?? '') || t.length < 3)).toEqual([])
      return
    case 39002:
      expect(rest.filter((t) => t[0] !== 'p' || !HEX64.test(t[1] ?? ''))).toEqual([])
      return
    case 39003:
      expect(rest.length).toBeGreaterThan(0)
      expect(rest.filter((t) => t[0] !== 'role' || (t[1] ?? '') === '')).toEqual([])
      return
    case 39005:
      expect(rest.filter((t) => !(t[0] === 'e' && HEX64.test(t[1] ?? '')) && t[0] !== 'a')).toEqual([])
      return
    default:
      throw new Error(`not a relay-signed group event: kind ${e.kind}`)
  }
}

export interface GroupWatch {
  client: TestClient
  /** every relay-signed event of the group received live so far (each already checked) */
  received: NostrEvent[]
  /** the next live event of `kind` satisfying `pred`, checked against the spec */
  live(kind: number, pred?: (e: NostrEvent) => boolean, timeoutMs?: number): Promise<NostrEvent>
  /** the stored event of `kind` read now by REQ (undefined when none), checked against the spec */
  now(kind: number): Promise<NostrEvent | undefined>
  /** after an OK: the stored `kind` read at once and the one delivered live both satisfy `pred`; the live one */
  changed(kind: number, pred: (e: NostrEvent) => boolean): Promise<NostrEvent>
  close(): void
}

/** Subscribes to `groupId`'s state and the relay's own 9000/9001 in it, from a connection of its own. */
export async function watchGroup(url: string, groupId: string, self: string): Promise<GroupWatch> {
  const client = await connect(url)
  const subId = newSubId('group')
  const received: NostrEvent[] = []
  const filters = [
    { kinds: STATE_KINDS, '#d': [groupId] },
    { kinds: [9000, 9001], '#h': [groupId], authors: [self] },
  ]
  await reqEvents(client, filters, subId)
  const eose = client.frames.findIndex((f) => f[0] === 'EOSE' && f[1] === subId)
  const isLive = (f: Frame) => f[0] === 'EVENT' && f[1] === subId && client.frames.indexOf(f) > eose
  const watch: GroupWatch = {
    client,
    received,
    async live(kind, pred = () => true, timeoutMs = 5000) {
      const f = await client.next((f) => isLive(f) && (f[2] as NostrEvent).kind === kind && pred(f[2] as NostrEvent), timeoutMs)
      const e = f[2] as NostrEvent
      expectSpecShape(e, groupId, self)
      received.push(e)
      return e
    },
    async now(kind) {
      const found = await reqEvents(client, [kind >= 39000 ? { kinds: [kind], '#d': [groupId] } : { kinds: [kind], '#h': [groupId] }])
      expect(found.length, `at most one kind ${kind} for ${groupId}`).toBeLessThanOrEqual(1)
      if (found[0]) expectSpecShape(found[0], groupId, self)
      return found[0]
    },
    async changed(kind, pred) {
      const stored = await watch.now(kind)
      expect(stored && pred(stored), `kind ${kind} read at once is the new state`).toBe(true)
      return watch.live(kind, pred)
    },
    close: () => client.close(),
  }
  return watch
}

/** The pubkeys of an event's `p` tags, each with the values after it. */
export const pTags = (e: NostrEvent | undefined) => (e?.tags ?? []).filter((t) => t[0] === 'p').map((t) => t.slice(1))

export const hasTag = (e: NostrEvent | undefined, tag: string[]) =>
  (e?.tags ?? []).some((t) => t.length === tag.length && t.every((v, i) => v === tag[i]))
