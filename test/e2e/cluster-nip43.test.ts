import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, signEvent, type TestKeys } from '../support/events'
import { callNip86 } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, client, publish, relayUrlOf, reqEvents } from '../support/relay-client'
import { useCluster, useRelays } from '../support/relay-fixtures'
import type { TestClient } from '../support/ws-client'

/** NIP-43 on two nodes of one PostgreSQL and one Redis: codes, members and the lists are the cluster's. */
describe('NIP-43 membership on a cluster of nodes', () => {
  const relays = useRelays()
  const operator = makeKeys()
  const cluster = useCluster(relays)
  const nodes = () => cluster.nodes(2, { operatorPubkeys: [operator.pubkey] })

  async function authed(r: TestRelay, host: string, keys: TestKeys): Promise<TestClient> {
    const c = await client(r, host)
    expect((await auth(c, keys, relayUrlOf(r, host))).accepted).toBe(true)
    return c
  }

  async function createInvite(r: TestRelay, host: string, uses = 1): Promise<string> {
    const answer = await callNip86(r, operator, 'createinvite', [3600, uses], host)
    return (answer.json.result as { code: string }).code
  }

  const joinEvent = (keys: TestKeys, claim: string) => signEvent(keys, { kind: 28934, tags: [['-'], ['claim', claim]] })

  it('shows a join on node A in the member list read on node B, and delivers its 8000 live there', async () => {
    const {
      host,
      nodes: [a, b],
    } = await nodes()
    const [member, joiner] = [makeKeys(), makeKeys()]
    await callNip86(a!, operator, 'allowpubkey', [member.pubkey], host)
    const watcher = await authed(b!, host, member)
    watcher.send(['REQ', 'live', { kinds: [8000], '#p': [joiner.pubkey] }])
    await watcher.next((f) => f[0] === 'EOSE' && f[1] === 'live')
    expect((await publish(await authed(a!, host, joiner), joinEvent(joiner, await createInvite(a!, host)))).accepted).toBe(true)
    const [list] = await reqEvents(await authed(b!, host, joiner), [{ kinds: [13534] }])
    expect(list?.tags.filter((t) => t[0] === 'member').map((t) => t[1])).toEqual([member.pubkey, joiner.pubkey].sort())
    const live = await watcher.next((f) => f[0] === 'EVENT' && f[1] === 'live')
    expect((live[2] as NostrEvent).tags).toEqual([['-'], ['p', joiner.pubkey]])
  })

  it('admits exactly one of two users redeeming one single-use code at once on two nodes', async () => {
    const {
      host,
      nodes: [a, b],
    } = await nodes()
    const code = await createInvite(a!, host)
    const [first, second] = [makeKeys(), makeKeys()]
    const [onA, onB] = [await authed(a!, host, first), await authed(b!, host, second)]
    const answers = await Promise.all([publish(onA, joinEvent(first, code)), publish(onB, joinEvent(second, code))])
    expect(answers.map((o) => o.accepted).sort()).toEqual([false, true])
    expect(answers.find((o) => !o.accepted)?.prefix).toBe('restricted')
    const listed = (await callNip86(b!, operator, 'listallowedpubkeys', [], host)).json.result as { pubkey: string }[]
    expect(listed).toHaveLength(1)
  })
})
