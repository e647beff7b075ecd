import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChannelReads, type LatestIds } from '../../../src/actors/community/channel-reads'
import { planChannelEvent } from '../../../src/actors/community/community-channels'
import type { ChannelStore } from '../../../src/infra/store/channel-store'
import { openSqliteChannelStore } from '../../../src/infra/store/sqlite/sqlite-channel-store'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { prefixOf } from '../../../src/protocols/reasons'
import { channelRow } from '../../support/channel-rows'

const community = 'c'
const NOW = 1_700_000_000
const ADMIN = 'a'.repeat(64)
const RELAY = 'f'.repeat(64)
const KNOWN = `0badf00d${'1'.repeat(56)}`

const event = (kind: number, tags: string[][], ageSeconds = 0): NostrEvent => ({
  id: 'e'.repeat(64),
  pubkey: ADMIN,
  created_at: NOW - ageSeconds,
  kind,
  tags: [['h', 'hive'], ...tags],
  content: '',
  sig: 's'.repeat(128),
})

/** planChannelEvent on the real SQLite channel rows, the clock and the latest ids given by the test. */
describe('planning a channel event: timeline references and late publication', () => {
  const dir = mkdtempSync(join(tmpdir(), 'apiary-channel-plan-'))
  let channels: ChannelStore
  beforeAll(async () => {
    channels = openSqliteChannelStore(join(dir, 'apiary.sqlite'))
    await channels.create(community, channelRow('hive'), ADMIN)
  })
  afterAll(async () => {
    await channels.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const plan = (e: NostrEvent, latest: LatestIds = async () => [KNOWN], now = NOW) =>
    planChannelEvent(e, {
      relayPubkey: RELAY,
      reads: new ChannelReads(channels, community, latest),
      isModerator: () => false,
      nowSeconds: () => now,
      latePublication: { maxModerationAgeSeconds: 60, maxPostAgeSeconds: 3600 },
    })
  const outcome = async (p: ReturnType<typeof plan>) => {
    const r = await p
    return r.ok ? 'ok' : prefixOf(r.error)
  }

  it('takes a known reference, refuses an unknown one with "invalid:", and never reads ids for an event without', async () => {
    let reads = 0
    const counted: LatestIds = async () => {
      reads++
      return [KNOWN]
    }
    expect(await outcome(plan(event(9, [['previous', '0badf00d']]), counted))).toBe('ok')
    expect(await outcome(plan(event(9, [['previous', 'deadbeef']]), counted))).toBe('invalid')
    expect(reads).toBe(2)
    expect(await outcome(plan(event(9, []), counted))).toBe('ok')
    expect(reads).toBe(2)
  })

  it('answers "error:" when the store refused the latest ids for their cost, and plans an event without references', async () => {
    const refused: LatestIds = async () => undefined
    expect(await outcome(plan(event(9, [['previous', '0badf00d']]), refused))).toBe('error')
    expect(await outcome(plan(event(9, []), refused))).toBe('ok')
  })

  it('judges age by the clock it is given: a change 60 s old is taken, 61 s refused "invalid:"', async () => {
    const put = (age: number) => event(9000, [['p', 'b'.repeat(64)]], age)
    expect(await outcome(plan(put(60)))).toBe('ok')
    expect(await outcome(plan(put(61)))).toBe('invalid')
    // the same event, judged a second earlier (a node whose clock is behind)
    expect(await outcome(plan(put(61), undefined, NOW - 1))).toBe('ok')
  })
})
