import { afterEach, describe, expect, it, vi } from 'vitest'
import { makeKeys } from '../support/events'
import { channelEvent, createChannel, join, latestIds, post, postAfter, putUser } from '../support/nip29-client'
import { client, fresh, idsOf, nowSeconds, publish, reqEvents } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'

const ref = (id: string) => id.slice(0, 8)

/** NIP-29 timeline references (`previous`) and late publication, on one embedded node. */
describe('NIP-29 timeline references', () => {
  const relays = useRelays()

  async function setup(overrides = {}) {
    const r = await relays.start(overrides)
    const c = await client(r)
    const admin = makeKeys()
    const member = makeKeys()
    expect((await createChannel(c, admin, 'hive')).ok.accepted).toBe(true)
    expect((await putUser(c, admin, 'hive', member.pubkey)).ok.accepted).toBe(true)
    return { r, c, admin, member }
  }

  it('accepts a post whose references name recent events of the channel, in one tag or a tag each', async () => {
    const { c, admin, member } = await setup()
    const first = await post(c, admin, 'hive')
    const second = await post(c, admin, 'hive')
    const one = await postAfter(c, member, 'hive', [ref(first.event.id), ref(second.event.id)])
    expect(one.ok).toMatchObject({ accepted: true })
    const each = await channelEvent(c, member, 'hive', 9, [
      ['previous', ref(first.event.id)],
      ['previous', ref(one.event.id)],
    ])
    expect(each.ok).toMatchObject({ accepted: true })
  })

  it('refuses a reference to an event it does not have with "invalid:" naming the reference, and stores nothing', async () => {
    const { c, admin, member } = await setup()
    const known = await post(c, admin, 'hive')
    const unknown = '0badf00d'
    const sent = await postAfter(c, member, 'hive', [ref(known.event.id), unknown])
    expect(sent.ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect(sent.ok.message).toContain(unknown)
    expect(await reqEvents(c, [{ ids: [sent.event.id] }])).toEqual([])
  })

  it("refuses a reference to another channel's event", async () => {
    const { c, admin, member } = await setup()
    expect((await createChannel(c, admin, 'other')).ok.accepted).toBe(true)
    const elsewhere = await post(c, admin, 'other')
    expect((await postAfter(c, member, 'hive', [ref(elsewhere.event.id)])).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('takes the 50th newest event of the channel as a reference and refuses the 51st', async () => {
    const { c, admin, member } = await setup()
    // dated apart, so the order of the channel's latest events is the order they were sent in
    const base = nowSeconds() - 100
    for (let i = 0; i < 55; i++) expect((await post(c, admin, 'hive', base + i)).ok.accepted).toBe(true)
    const latest = await latestIds(c, 'hive', 51)
    expect((await postAfter(c, member, 'hive', [ref(latest[50]!)])).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect((await postAfter(c, member, 'hive', [ref(latest[49]!)])).ok).toMatchObject({ accepted: true })
  })

  it('looks as far back as channels.timelineWindowEvents says', async () => {
    const { c, admin, member } = await setup({ channels: { timelineWindowEvents: 3 } })
    const base = nowSeconds() - 10
    for (let i = 0; i < 4; i++) await post(c, admin, 'hive', base + i)
    const latest = await latestIds(c, 'hive', 4)
    expect((await postAfter(c, member, 'hive', [ref(latest[3]!)])).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect((await postAfter(c, member, 'hive', [ref(latest[2]!)])).ok).toMatchObject({ accepted: true })
  })

  it('checks the references of a channel change as well', async () => {
    const { c, admin } = await setup()
    const seen = await post(c, admin, 'hive')
    const bee = makeKeys().pubkey
    const bad = await channelEvent(c, admin, 'hive', 9000, [
      ['p', bee],
      ['previous', 'deadbeef'],
    ])
    expect(bad.ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    const good = await channelEvent(c, admin, 'hive', 9000, [
      ['p', bee],
      ['previous', ref(seen.event.id)],
    ])
    expect(good.ok).toMatchObject({ accepted: true })
  })

  it.each([
    { name: 'a whole event id', refs: ['a'.repeat(64)] },
    { name: 'upper case', refs: ['ABCDEF01'] },
    { name: '51 references', refs: Array.from({ length: 51 }, (_, i) => i.toString(16).padStart(8, '0')) },
  ])('refuses $name with "invalid:"', async ({ refs }) => {
    const { c, member } = await setup()
    expect((await postAfter(c, member, 'hive', refs)).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('leaves channel events without references, and events outside channels, alone', async () => {
    const { c, admin, member } = await setup()
    expect((await post(c, member, 'hive')).ok.accepted).toBe(true)
    const outside = fresh(admin, { kind: 1, tags: [['previous', 'not a reference']] })
    expect(await publish(c, outside)).toMatchObject({ accepted: true })
    expect(idsOf(await reqEvents(c, [{ ids: [outside.event.id] }]))).toEqual([outside.event.id])
  })
})

describe('NIP-29 late publication', () => {
  const relays = useRelays()
  afterEach(() => {
    vi.useRealTimers()
  })

  /** freezes the wall clock (Date only: timers run on) at `seconds`, for the relay and the signer alike */
  const freezeAt = (seconds: number) => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(seconds * 1000 + 500)
  }

  async function setup() {
    const r = await relays.start()
    const c = await client(r)
    const admin = makeKeys()
    expect((await createChannel(c, admin, 'hive', { flags: ['restricted'] })).ok.accepted).toBe(true)
    return { r, c, admin }
  }

  it('refuses a channel change dated days ago with "invalid:", and does not apply it', async () => {
    const { c, admin } = await setup()
    const bee = makeKeys()
    const old = await channelEvent(c, admin, 'hive', 9000, [['p', bee.pubkey]], nowSeconds() - 2 * 86_400)
    expect(old.ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect((await post(c, bee, 'hive')).ok).toMatchObject({ accepted: false, prefix: 'restricted' })
  })

  it('takes a channel change 60 s old and refuses one 61 s old (channels.maxModerationAgeSeconds)', async () => {
    const { c, admin } = await setup()
    const now = nowSeconds()
    freezeAt(now)
    const atLimit = await channelEvent(c, admin, 'hive', 9000, [['p', makeKeys().pubkey]], now - 60)
    expect(atLimit.ok).toMatchObject({ accepted: true })
    const past = await channelEvent(c, admin, 'hive', 9000, [['p', makeKeys().pubkey]], now - 61)
    expect(past.ok).toMatchObject({ accepted: false, prefix: 'invalid' })
  })

  it('refuses a join request or a leave request 61 s old', async () => {
    const { c, admin } = await setup()
    const bee = makeKeys()
    const now = nowSeconds()
    freezeAt(now)
    expect((await channelEvent(c, bee, 'hive', 9021, [], now - 61)).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect((await join(c, bee, 'hive')).ok.accepted).toBe(true)
    expect((await channelEvent(c, bee, 'hive', 9022, [], now - 61)).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    expect((await post(c, bee, 'hive')).ok.accepted).toBe(true)
    expect((await post(c, admin, 'hive')).ok.accepted).toBe(true)
  })

  it('takes a message an hour old and refuses one older (channels.maxPostAgeSeconds), and takes any age outside channels', async () => {
    const { c, admin } = await setup()
    const now = nowSeconds()
    freezeAt(now)
    expect((await post(c, admin, 'hive', now - 3600)).ok).toMatchObject({ accepted: true })
    expect((await post(c, admin, 'hive', now - 3601)).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
    const outside = fresh(admin, { kind: 1, created_at: now - 86_400 })
    expect(await publish(c, outside)).toMatchObject({ accepted: true })
  })

  it('takes old messages when channels.maxPostAgeSeconds is 0, and still refuses old channel changes', async () => {
    const r = await relays.start({ channels: { maxPostAgeSeconds: 0 } })
    const c = await client(r)
    const admin = makeKeys()
    expect((await createChannel(c, admin, 'hive')).ok.accepted).toBe(true)
    const day = nowSeconds() - 86_400
    expect((await post(c, admin, 'hive', day)).ok.accepted).toBe(true)
    expect((await channelEvent(c, admin, 'hive', 9002, [['name', 'x']], day)).ok).toMatchObject({ accepted: false, prefix: 'invalid' })
  })
})
