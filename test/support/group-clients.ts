import NDK, { NDKEvent, NDKPrivateKeySigner, NDKPublishError, NDKRelaySet, NDKSimpleGroup } from '@nostr-dev-kit/ndk'
import * as nip19 from 'nostr-tools/nip19'
import { SimplePool, useWebSocketImplementation } from 'nostr-tools/pool'
import { type EventTemplate, finalizeEvent, generateSecretKey, getPublicKey, type NostrEvent } from 'nostr-tools/pure'
import { Relay } from 'nostr-tools/relay'
import { afterEach } from 'vitest'
import WebSocket from 'ws'
import type { ConfigInput } from '../../src/infra/config'
import { type GroupWatch, watchGroup } from './group-watch'
import type { TestRelay } from './relay'
import { useRelays } from './relay-fixtures'

useWebSocketImplementation(WebSocket)
globalThis.WebSocket ??= WebSocket as unknown as typeof globalThis.WebSocket

export interface GroupUser {
  secretKey: Uint8Array
  pubkey: string
}

export interface RelayDocument {
  pubkey?: string
  self?: string
  supported_nips?: number[]
}

export interface GroupRelay {
  relay: TestRelay
  url: string
  pool: SimplePool
  document(): Promise<RelayDocument>
  naddrOf(groupId: string, pubkey: string): string
  publish(user: GroupUser, template: Omit<EventTemplate, 'created_at'> & { created_at?: number }): Promise<NostrEvent>
  ndk(user?: GroupUser): Promise<NDK>
  /** without `groupId`, NDK picks its own (24 random letters and digits) */
  ndkGroup(ndk: NDK, groupId?: string): NDKSimpleGroup
  /** a raw connection watching `groupId` (group-watch.ts), closed after the test */
  watch(groupId: string): Promise<GroupWatch>
}

/** The relay's answer to an event NDK published: OK true, or the OK false reason NDK rejected with. */
export type NdkAnswer = { accepted: true } | { accepted: false; reason: string }

export async function ndkAnswer(published: Promise<unknown>): Promise<NdkAnswer> {
  try {
    await published
    return { accepted: true }
  } catch (error) {
    if (!(error instanceof NDKPublishError)) throw error
    const [reason] = [...error.errors.values()].map((e) => e.message)
    return { accepted: false, reason: reason ?? error.message }
  }
}

/** An event NDK has no group method for, signed by `ndk`'s signer and published to the relay set. */
export function ndkPublish(group: NDKSimpleGroup, kind: number, tags: string[][] = [], content = ''): Promise<NdkAnswer> {
  const event = new NDKEvent(group.ndk, { kind, content, tags: [['h', group.groupId], ...tags] })
  return ndkAnswer(event.publish(group.relaySet))
}

export const newGroupUser = (): GroupUser => {
  const secretKey = generateSecretKey()
  return { secretKey, pubkey: getPublicKey(secretKey) }
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

export function useGroupClients() {
  const relays = useRelays()
  const closers: (() => unknown)[] = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })

  /** A relay this process started, served as community `communityId` at its 127.0.0.1 URL. */
  function attach(relay: TestRelay, communityId = 'default'): GroupRelay {
    const url = relay.url
    const pool = new SimplePool()
    closers.push(() => pool.destroy())
    const writers = new Map<string, Relay>()
    const writerFor = async (user: GroupUser) => {
      let writer = writers.get(user.pubkey)
      if (!writer) {
        writer = await Relay.connect(url)
        writers.set(user.pubkey, writer)
        const opened = writer
        closers.push(() => opened.close())
      }
      return writer
    }
    return {
      relay,
      url,
      pool,
      async document() {
        const res = await fetch(url.replace(/^ws/, 'http'), { headers: { Accept: 'application/nostr+json' } })
        return (await res.json()) as RelayDocument
      },
      naddrOf: (groupId, pubkey) => nip19.naddrEncode({ identifier: groupId, pubkey, kind: 39000, relays: [url] }),
      async publish(user, template) {
        const event = finalizeEvent({ created_at: nowSeconds(), ...template }, user.secretKey)
        await (await writerFor(user)).publish(event)
        return event
      },
      async ndk(user) {
        const ndk = new NDK({
          explicitRelayUrls: [url],
          enableOutboxModel: false,
          autoConnectUserRelays: false,
          signer: user ? new NDKPrivateKeySigner(user.secretKey) : undefined,
        })
        closers.push(() => {
          for (const r of ndk.pool.relays.values()) r.disconnect()
        })
        await ndk.connect(5_000)
        return ndk
      },
      ndkGroup: (ndk, groupId) => new NDKSimpleGroup(ndk, NDKRelaySet.fromRelayUrls([url], ndk), groupId),
      async watch(groupId) {
        const self = relay.relay.communityPubkey(communityId)
        const w = await watchGroup(url, groupId, self)
        closers.push(() => w.close())
        return w
      },
    }
  }

  async function start(overrides: ConfigInput = {}): Promise<GroupRelay> {
    return attach(await relays.start(overrides))
  }

  return { start, attach }
}
