import { describe, expect, it } from 'vitest'
import { makeKeys } from '../support/events'
import { client, fresh, idsOf, nowSeconds, publish, publishNew, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

describe('deletion requests (NIP-09)', () => {
  const relays = useRelays()

  it('removes the author’s own event named by an e tag and stores the deletion', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const target = await publishNew(c, keys)
    const kept = await publishNew(c, keys)
    const deletion = await publishNew(c, keys, { kind: 5, tags: [['e', target.event.id]] })
    expect(await reqEvents(c, [{ ids: [target.event.id] }])).toEqual([])
    expect(idsOf(await reqEvents(c, [{ ids: [kept.event.id, deletion.event.id] }])).sort()).toEqual(
      [kept.event.id, deletion.event.id].sort(),
    )
  })

  it('ignores a deletion of another author’s event', async () => {
    const r = await relays.start()
    const c = await client(r)
    const author = makeKeys()
    const stranger = makeKeys()
    const target = await publishNew(c, author)
    await publishNew(c, stranger, { kind: 5, tags: [['e', target.event.id]] })
    expect(idsOf(await reqEvents(c, [{ ids: [target.event.id] }]))).toEqual([target.event.id])
    // and the stranger's deletion does not block the author re-sending it either
    expect(await publish(c, target)).toMatchObject({ accepted: true, prefix: 'duplicate' })
  })

  it('refuses an event its author deleted when it is sent again', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const target = await publishNew(c, keys)
    await publishNew(c, keys, { kind: 5, tags: [['e', target.event.id]] })
    const again = await publish(c, target)
    expect(again.accepted).toBe(false)
    expect(again.prefix).toBe('blocked')
    expect(await reqEvents(c, [{ ids: [target.event.id] }])).toEqual([])
  })

  it('refuses an event whose deletion arrived first', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const target = fresh(keys)
    await publishNew(c, keys, { kind: 5, tags: [['e', target.event.id]] })
    const late = await publish(c, target)
    expect(late.accepted).toBe(false)
    expect(late.prefix).toBe('blocked')
    expect(await reqEvents(c, [{ ids: [target.event.id] }])).toEqual([])
  })

  it('deletes by a tag only the versions up to the deletion’s created_at', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const t = nowSeconds()
    const address = `30023:${keys.pubkey}:article`
    await publishNew(c, keys, { kind: 30023, created_at: t - 100, tags: [['d', 'article']] })
    await publishNew(c, keys, { kind: 5, created_at: t - 50, tags: [['a', address]] })
    expect(await reqEvents(c, [{ authors: [keys.pubkey], kinds: [30023] }])).toEqual([])
    // an older version arriving later is covered by the deletion
    const older = await publish(c, fresh(keys, { kind: 30023, created_at: t - 60, tags: [['d', 'article']] }))
    expect(older.accepted).toBe(false)
    expect(older.prefix).toBe('blocked')
    // a version created after the deletion is a new article
    const newer = await publishNew(c, keys, { kind: 30023, created_at: t - 10, tags: [['d', 'article']] })
    expect(idsOf(await reqEvents(c, [{ authors: [keys.pubkey], kinds: [30023] }]))).toEqual([newer.event.id])
  })

  it('ignores an a-tag deletion naming another author’s address', async () => {
    const r = await relays.start()
    const c = await client(r)
    const author = makeKeys()
    const stranger = makeKeys()
    const article = await publishNew(c, author, { kind: 30023, created_at: nowSeconds() - 10, tags: [['d', 'x']] })
    await publishNew(c, stranger, { kind: 5, tags: [['a', `30023:${author.pubkey}:x`]] })
    expect(idsOf(await reqEvents(c, [{ authors: [author.pubkey], kinds: [30023] }]))).toEqual([article.event.id])
  })

  it('does not let a deletion delete a deletion', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const target = await publishNew(c, keys)
    const del1 = await publishNew(c, keys, { kind: 5, tags: [['e', target.event.id]] })
    await publishNew(c, keys, { kind: 5, tags: [['e', del1.event.id]] })
    expect(idsOf(await reqEvents(c, [{ ids: [del1.event.id] }]))).toEqual([del1.event.id])
  })

  it('stops serving a deleted event to a subscription opened afterwards, on every connection', async () => {
    const r = await relays.start()
    const c = await client(r)
    const keys = makeKeys()
    const target = await publishNew(c, keys)
    await publishNew(await client(r), keys, { kind: 5, tags: [['e', target.event.id]] })
    expect(await reqEvents(await client(r), [{ authors: [keys.pubkey], kinds: [1] }])).toEqual([])
  })
})
