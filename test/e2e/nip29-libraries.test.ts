import type { NDKEvent } from '@nostr-dev-kit/ndk'
import { generateCreateGroupEventTemplate, loadGroup, loadGroupFromCode } from 'nostr-tools/nip29'
import { describe, expect, it } from 'vitest'
import { newGroupUser, useGroupClients } from '../support/group-clients'

/** Group clients as published, against a real relay: they find the relay's key through NIP-11. */
describe('NIP-29 client libraries', () => {
  const clients = useGroupClients()

  describe('nostr-tools nip29', () => {
    it('loads a group by id, its metadata, admins and members signed by the key NIP-11 names', async () => {
      const g = await clients.start()
      const owner = newGroupUser()
      await g.publish(owner, generateCreateGroupEventTemplate('pizza'))
      await g.publish(owner, {
        kind: 9002,
        tags: [
          ['h', 'pizza'],
          ['name', 'Pizza Lovers'],
          ['about', 'a group for people who love pizza'],
        ],
        content: '',
      })
      const group = await loadGroup({ pool: g.pool, groupReference: { id: 'pizza', host: g.url } })
      expect(group.metadata).toMatchObject({ id: 'pizza', name: 'Pizza Lovers', about: 'a group for people who love pizza' })
      expect(group.metadata.pubkey).toBe((await g.document()).self)
      expect(group.admins?.map((a) => a.pubkey)).toEqual([owner.pubkey])
      expect(group.members?.map((m) => m.pubkey)).toEqual([owner.pubkey])
    })

    it('loads a group from its naddr code, which names the relay’s self key', async () => {
      const g = await clients.start()
      const owner = newGroupUser()
      await g.publish(owner, generateCreateGroupEventTemplate('bees'))
      const { self } = await g.document()
      expect(self).toBe(g.relay.relay.communityPubkey('default'))
      const group = await loadGroupFromCode(g.pool, g.naddrOf('bees', self as string))
      expect(group.metadata).toMatchObject({ id: 'bees', pubkey: self })
      expect(group.members?.map((m) => m.pubkey)).toEqual([owner.pubkey])
    })
  })

  describe('NDK', () => {
    it('subscribes to a group’s 39000 and receives the new state after an edit', async () => {
      const g = await clients.start()
      const owner = newGroupUser()
      const ndk = await g.ndk(owner)
      const group = g.ndkGroup(ndk, 'hive')
      await group.createGroup()
      const { self } = await g.document()
      const seen: NDKEvent[] = []
      let renamed!: () => void
      const arrived = new Promise<void>((resolve) => (renamed = resolve))
      const sub = ndk.subscribe(
        { kinds: [39000], authors: [self as string], '#d': ['hive'] },
        {
          closeOnEose: false,
          onEvent: (e) => {
            seen.push(e)
            if (e.tagValue('name') === 'The Hive') renamed()
          },
        },
      )
      await group.setMetadata({ name: 'The Hive', about: 'bees only' })
      await arrived
      sub.stop()
      const latest = seen.at(-1)
      expect(latest?.pubkey).toBe(self)
      expect([latest?.tagValue('d'), latest?.tagValue('about')]).toEqual(['hive', 'bees only'])
      expect((await group.getMetadata()).name).toBe('The Hive')
    })
  })
})
