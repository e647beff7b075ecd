import { describe, expect, it } from 'vitest'
import { KIND_JOB_ASSIGNMENT } from '../../src/protocols/jobs'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { prefixOf } from '../../src/protocols/reasons'
import { makeKeys, signEvent, type TestKeys } from '../support/events'
import { authAsAgent } from '../support/nip29-client'
import { callNip86, managementUrl, nip98Header, postNip86 } from '../support/nip86-client'
import type { TestRelay } from '../support/relay'
import { auth, client, publish, relayUrlOf } from '../support/relay-client'
import { useRelays } from '../support/relay-fixtures'
import type { Frame, TestClient } from '../support/ws-client'

/**
 * Role domains (docs/agent-registry.md): the roster gives agents roles, the community's policy says which
 * roles may address which, and events across domains that it does not allow are refused `restricted:`.
 */
const HIVE = 'hive.test'
const errorPrefix = (a: { json: { error?: string } }) => prefixOf(a.json.error ?? '')

describe('role domains', () => {
  const relays = useRelays()
  const admin = makeKeys()
  const start = () => relays.start({ communities: [{ id: 'hive', hosts: [HIVE], admins: [admin.pubkey] }] })

  async function authed(r: TestRelay, keys: TestKeys): Promise<TestClient> {
    const c = await client(r, HIVE)
    expect((await auth(c, keys, relayUrlOf(r, HIVE))).accepted).toBe(true)
    return c
  }

  async function agentWithRole(r: TestRelay, role: string): Promise<TestKeys> {
    const keys = makeKeys()
    expect((await callNip86(r, admin, 'setagenttier', [keys.pubkey, 'standard'], HIVE)).json).toEqual({ result: true })
    expect((await callNip86(r, admin, 'setagentrole', [keys.pubkey, role], HIVE)).json).toEqual({ result: true })
    return keys
  }

  // two identical calls within a second would be one NIP-98 event, refused the second time as a replay
  const listAgents = (r: TestRelay, variant: number) => {
    const body = JSON.stringify({ method: 'listagents', params: [] }, null, variant)
    return postNip86(r, body, nip98Header(admin, managementUrl(r, HIVE), body), HIVE)
  }

  const mention = (from: TestKeys, to: TestKeys) =>
    signEvent(from, { kind: 1, content: `to ${to.pubkey.slice(0, 8)} ${Math.random()}`, tags: [['p', to.pubkey]] })

  it('refuses an agent addressing an agent of a role its rule does not list with restricted:, and accepts what the policy allows', async () => {
    const r = await start()
    const [planner, worker, auditor] = [
      await agentWithRole(r, 'planner'),
      await agentWithRole(r, 'worker'),
      await agentWithRole(r, 'auditor'),
    ]
    const p = await authed(r, planner)
    const w = await authed(r, worker)
    // no rule yet: no domains
    expect((await publish(w, mention(worker, auditor))).accepted).toBe(true)
    expect((await callNip86(r, admin, 'setroledomain', ['planner', ['worker']], HIVE)).json).toEqual({ result: true })
    expect((await publish(p, mention(planner, worker))).accepted).toBe(true)
    expect(await publish(p, mention(planner, auditor))).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect(await publish(w, mention(worker, auditor))).toMatchObject({ accepted: false, prefix: 'restricted' })
    // people are outside the domains: they address anyone, and anyone addresses them
    const person = makeKeys()
    const h = await authed(r, person)
    expect((await publish(h, mention(person, auditor))).accepted).toBe(true)
    expect((await publish(w, mention(worker, person))).accepted).toBe(true)
    expect((await callNip86(r, admin, 'listroledomains', [], HIVE)).json).toEqual({
      result: { rules: [{ from: 'planner', to: ['worker'] }], channels: [] },
    })
    // the rule removed: no rule left, no domains
    expect((await callNip86(r, admin, 'setroledomain', ['planner', []], HIVE)).json).toEqual({ result: true })
    expect((await publish(p, mention(planner, auditor))).accepted).toBe(true)
  })

  it('lets only agents of the listed roles post in a role-restricted channel, people still post there', async () => {
    const r = await start()
    const [worker, auditor] = [await agentWithRole(r, 'worker'), await agentWithRole(r, 'auditor')]
    const a = await authed(r, admin)
    expect((await publish(a, signEvent(admin, { kind: 9007, tags: [['h', 'ops']] }))).accepted).toBe(true)
    const person = makeKeys()
    // members of the channel all three (NIP-29): what is left to refuse is the role
    for (const k of [worker, auditor, person])
      expect(
        (
          await publish(
            a,
            signEvent(admin, {
              kind: 9000,
              tags: [
                ['h', 'ops'],
                ['p', k.pubkey],
              ],
            }),
          )
        ).accepted,
      ).toBe(true)
    expect((await callNip86(r, admin, 'setchannelroles', ['ops', ['worker']], HIVE)).json).toEqual({ result: true })
    const post = (keys: TestKeys) => signEvent(keys, { kind: 9, content: `in ops ${Math.random()}`, tags: [['h', 'ops']] })
    expect((await publish(await authed(r, worker), post(worker))).accepted).toBe(true)
    const refused = await publish(await authed(r, auditor), post(auditor))
    expect(refused).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect(refused.message).toMatch(/roles worker only/)
    expect((await publish(await authed(r, person), post(person))).accepted).toBe(true)
  })

  it("holds a key a roster agent attested at AUTH to that agent's role, and a key a person attested to none", async () => {
    const r = await start()
    const [worker, auditor] = [await agentWithRole(r, 'worker'), await agentWithRole(r, 'auditor')]
    expect((await callNip86(r, admin, 'setroledomain', ['planner', ['worker']], HIVE)).json).toEqual({ result: true })
    expect((await callNip86(r, admin, 'setchannelroles', ['ops', ['auditor']], HIVE)).json).toEqual({ result: true })
    const [escapee, personal, person] = [makeKeys(), makeKeys(), makeKeys()]
    const e = await client(r, HIVE)
    expect((await authAsAgent(e, escapee, worker, relayUrlOf(r, HIVE))).accepted).toBe(true)
    // the worker's rule lists no other role: its attested key may not address an auditor either
    expect(await publish(e, mention(escapee, auditor))).toMatchObject({ accepted: false, prefix: 'restricted' })
    expect(await publish(e, signEvent(escapee, { kind: 9, content: 'in ops', tags: [['h', 'ops']] }))).toMatchObject({
      accepted: false,
      prefix: 'restricted',
    })
    expect((await publish(e, mention(escapee, worker))).accepted).toBe(true)
    const p = await client(r, HIVE)
    expect((await authAsAgent(p, personal, person, relayUrlOf(r, HIVE))).accepted).toBe(true)
    expect((await publish(p, mention(personal, auditor))).accepted).toBe(true)
  })

  it('lists roles with the agents, keeps a role across a tier change, and refuses a role for a pubkey off the roster with invalid:', async () => {
    const r = await start()
    const worker = await agentWithRole(r, 'worker')
    expect((await callNip86(r, admin, 'setagenttier', [worker.pubkey, 'elevated'], HIVE)).json).toEqual({ result: true })
    expect((await listAgents(r, 0)).json.result).toEqual([{ pubkey: worker.pubkey, tier: 'elevated', role: 'worker' }])
    expect((await callNip86(r, admin, 'setagentrole', [worker.pubkey, ''], HIVE)).json).toEqual({ result: true })
    expect((await listAgents(r, 1)).json.result).toEqual([{ pubkey: worker.pubkey, tier: 'elevated' }])
    expect(errorPrefix(await callNip86(r, admin, 'setagentrole', [makeKeys().pubkey, 'worker'], HIVE))).toBe('invalid')
    expect(errorPrefix(await callNip86(r, admin, 'setagentrole', [worker.pubkey, 'Not A Role'], HIVE))).toBe('invalid')
    expect((await callNip86(r, makeKeys(), 'setroledomain', ['worker', ['auditor']], HIVE)).status).toBe(403)
  })

  it("hands a dispatched job only to an agent its requester's role may address; the queue goes on past it", async () => {
    const r = await start()
    const [planner, auditor, worker] = [
      await agentWithRole(r, 'planner'),
      await agentWithRole(r, 'auditor'),
      await agentWithRole(r, 'worker'),
    ]
    expect((await callNip86(r, admin, 'setroledomain', ['planner', ['worker']], HIVE)).json).toEqual({ result: true })
    /** an agent connection offering `work`: listening for its assignments, announced, heartbeating (ACTIVE) */
    const serving = async (keys: TestKeys) => {
      const c = await authed(r, keys)
      c.send(['REQ', 'assignments', { kinds: [KIND_JOB_ASSIGNMENT], '#p': [keys.pubkey] }])
      await c.next((f) => f[0] === 'EOSE' && f[1] === 'assignments')
      const announcement = signEvent(keys, {
        kind: 31990,
        tags: [
          ['d', 'apiary-agent'],
          ['c', 'work'],
        ],
        content: '{}',
      })
      expect((await publish(c, announcement)).accepted).toBe(true)
      expect((await publish(c, signEvent(keys, { kind: 20001, content: 'online' }))).accepted).toBe(true)
      return c
    }
    const jobOf = (f: Frame) => (f[2] as NostrEvent).tags.find((t) => t[0] === 'e')?.[1]
    const assigned = (c: TestClient) =>
      c.next(
        (f) =>
          f[0] === 'EVENT' && f[1] === 'assignments' && (f[2] as NostrEvent).tags.some((t) => t[0] === 'status' && t[1] === 'assigned'),
      )
    const ask = async (keys: TestKeys, input: string) => {
      const job = signEvent(keys, { kind: 5050, tags: [['c', 'work'], ['dispatch'], ['i', input, 'text']], content: '' })
      expect((await publish(await authed(r, keys), job)).accepted).toBe(true)
      return job.event.id
    }
    const a = await serving(auditor)
    const planned = await ask(planner, 'planned')
    // a person's job, asked after the planner's, goes to the auditor: the planner's waits without holding it up
    const anyone = await ask(makeKeys(), 'anyone')
    expect(jobOf(await assigned(a))).toBe(anyone)
    const w = await serving(worker)
    expect(jobOf(await assigned(w))).toBe(planned)
  })
})
