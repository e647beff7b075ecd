import { describe, expect, it } from 'vitest'
import { type ForwardedWriteDeps, judgeForwardedWrite } from '../../../src/actors/mesh/forwarded-write'
import { type CommunityRecord, DEFAULT_SETTINGS } from '../../../src/infra/store/community-store'
import { HOST_WRITE, NO_AUTH } from '../../../src/protocols/mesh/session-frames'
import { makeKeys, signEvent } from '../../support/events'

const RELAY = makeKeys()
const record: CommunityRecord = {
  id: 'c1',
  name: 'c1',
  hosts: [],
  agents: [],
  admins: [],
  settings: { ...DEFAULT_SETTINGS, writePolicy: 'members' },
  kinds: { allowed: [], disallowed: [] },
}

function deps(banned: readonly string[] = []): ForwardedWriteDeps {
  return {
    record: (id) => (id === record.id ? record : undefined),
    gate: () => ({ isMemberNow: () => false, isMember: async () => false }),
    banOf: async (_community, pubkey) => (banned.includes(pubkey) ? { reason: 'spam' } : undefined),
    authRequired: true,
    relayPubkey: () => RELAY.pubkey,
    nowSeconds: () => Math.floor(Date.now() / 1000),
  }
}

describe('the owner judging a channel change another node forwarded', () => {
  const author = makeKeys()
  const create = signEvent(author, { kind: 9007, tags: [['h', 'den']] })

  it('judges a client’s write on that client’s AUTH: none is refused where AUTH is required', async () => {
    expect(await judgeForwardedWrite('c1', create.event, NO_AUTH, deps())).toMatch(/^auth-required: /)
  })

  it('judges a non-member client of a members-only community as its own node would: restricted', async () => {
    expect(await judgeForwardedWrite('c1', create.event, { pubkeys: [author.pubkey], owners: [] }, deps())).toMatch(/^restricted: /)
  })

  it('takes a host program’s write (relay.publish on a node that does not own the channel) as its own node does', async () => {
    expect(await judgeForwardedWrite('c1', create.event, HOST_WRITE, deps())).toBeNull()
  })
})
