import { generateSecretKey } from 'nostr-tools/pure'
import { afterEach, describe, expect, it } from 'vitest'
import { createKernel, type Kernel, tell } from '../../../src/actors/kernel'
import type { RegistryAnnounce, RegistryMsg } from '../../../src/actors/registry/messages'
import { registryActor, registryPath } from '../../../src/actors/registry/registry-actor'
import { createMemoryPresenceStore } from '../../../src/infra/gates/memory-presence'
import { createMetrics } from '../../../src/infra/metrics'
import { signAsRelay } from '../../../src/infra/relay-key'
import type { EventStore } from '../../../src/infra/store/event-store'
import { openSqliteEventStore } from '../../../src/infra/store/sqlite/sqlite-event-store'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { toSigningKey } from '../../../src/protocols/nip01/sign'
import { makeKeys, type SignedEvent, signEvent, type TestKeys } from '../../support/events'
import { recordEvents, settle, waitTurns } from '../kernel/harness'
import { ManualClock } from '../kernel/manual-clock'

/**
 * One community's agent registry on a real kernel, with the in-memory presence store and an SQLite event
 * store. Its community is a stand-in actor at `community/c` that records what the registry asks it to
 * deliver. Kernel time (restarts, redelivery) is a ManualClock; lease time is the presence store's clock.
 */
const C = 'c'
const TTL_SECONDS = 45
const relayKey = toSigningKey(generateSecretKey())

let kernel: Kernel
let stores: { close(): Promise<void> }[] = []
afterEach(async () => {
  await kernel.shutdown()
  for (const s of stores) await s.close()
  stores = []
})

interface Options {
  /** the event store the registry looks announcements up in (default: the test's SQLite store) */
  events?: (real: EventStore) => Pick<EventStore, 'query'>
  sign?: typeof signAsRelay
  heldHere?: () => Set<string>
  leaseSweepMs?: number
  /** the stand-in community's mailbox */
  communityMailbox?: number
}

function start(o: Options = {}) {
  const clock = new ManualClock()
  kernel = createKernel({ clock })
  const log = recordEvents(kernel)
  const store = openSqliteEventStore({ file: ':memory:', groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0 })
  stores.push(store)
  let presenceMs = 0
  const presence = createMemoryPresenceStore({ now: () => presenceMs })
  const metrics = createMetrics()
  const heard: RegistryAnnounce[] = []
  const blocked: (() => void)[] = []
  const communityRef = kernel.spawn<null, RegistryAnnounce | { type: 'Block' }>('community/c', {
    kind: 'community-stand-in',
    init: () => null,
    handle: async (s, m) => {
      if (m.type === 'Block') await new Promise<void>((resolve) => blocked.push(resolve))
      else heard.push(m)
      return s
    },
    mailboxCapacity: o.communityMailbox,
  })
  const warnings: string[] = []
  const held = new Set<string>()
  const t = { seconds: 1_000 }
  const ref = kernel.spawn(
    registryPath(C),
    registryActor({
      community: C,
      presence,
      events: o.events ? o.events(store) : store,
      sign: (tpl, at) => (o.sign ?? signAsRelay)(relayKey, tpl, at),
      communityRef: () => (kernel.exists('community/c') ? communityRef : undefined),
      heldHere: o.heldHere ?? (() => held),
      metrics,
      log: {
        warn: (_o: unknown, m?: string) => {
          warnings.push(m ?? '')
        },
      },
      nowSeconds: () => t.seconds,
      transientMaxSeconds: 2 * TTL_SECONDS,
      leaseSweepMs: o.leaseSweepMs ?? 3_600_000,
    }),
  )
  const say = (msg: RegistryMsg) => expect(tell(ref, msg)).toBe(true)
  const liveGauge = async () =>
    (await metrics.registry.getSingleMetric('apiary_agents')!.get()).values.find((v) => v.labels.state === 'live')?.value
  /** an agent heartbeating here: its presence set and held by a connection of this node, the registry told */
  const heartbeat = async (agent: TestKeys) => {
    await presence.set(C, agent.pubkey, 'online', TTL_SECONDS)
    held.add(agent.pubkey)
    say({ type: 'Heartbeat', pubkey: agent.pubkey })
  }
  const announce = async (agent: TestKeys): Promise<SignedEvent> => {
    const ann = signEvent(agent, { kind: 31990, tags: [['d', 'apiary-agent']], content: '{"capabilities":[]}' })
    expect((await store.save(C, ann.event, ann.raw)).status).toBe('saved')
    return ann
  }
  const events = () => heard.flatMap((m) => m.events.map((e) => e.event as NostrEvent))
  const departures = () => events().filter((e) => e.kind === 21990)
  const lapse = () => {
    presenceMs += (TTL_SECONDS + 1) * 1000
  }
  return { clock, log, presence, held, heard, blocked, warnings, ref, say, liveGauge, heartbeat, announce, events, departures, lapse, t }
}

const tagOf = (e: NostrEvent, name: string) => e.tags.find((x) => x[0] === name)?.[1]

describe('the agent registry actor', () => {
  it("offers a heartbeating agent's stored announcement to its community as its arrival, once", async () => {
    const r = start()
    const agent = makeKeys()
    const ann = await r.announce(agent)
    await r.heartbeat(agent)
    await waitTurns(() => r.heard.length === 1, 'the arrival')
    expect(r.heard[0]).toMatchObject({ type: 'Announce', from: 'registry', events: [{ raw: ann.raw }] })
    expect(await r.liveGauge()).toBe(1)
    await r.heartbeat(agent)
    await settle()
    expect(r.heard).toHaveLength(1)
  })

  it('tracks an agent whose announcement took effect while its lease was live, and tracks none without a lease', async () => {
    const r = start()
    const [live, gone] = [makeKeys(), makeKeys()]
    await r.presence.set(C, live.pubkey, 'online', TTL_SECONDS)
    r.say({ type: 'Announced', pubkey: live.pubkey })
    r.say({ type: 'Announced', pubkey: gone.pubkey })
    await expect.poll(() => r.liveGauge()).toBe(1)
    await settle()
    expect(await r.liveGauge()).toBe(1)
    expect(r.heard).toEqual([])
  })

  it('sweeps on its own timer and sends a relay-signed kind 21990 "expired" for an agent whose lease lapsed', async () => {
    const r = start({ leaseSweepMs: 10 })
    const agent = makeKeys()
    await r.announce(agent)
    await r.heartbeat(agent)
    await waitTurns(() => r.heard.length === 1, 'the arrival')
    r.lapse()
    await waitTurns(() => r.departures().length === 1, 'the departure', 200_000)
    const [departure] = r.departures()
    expect(departure!.pubkey).toBe(relayKey.pubkey)
    expect(tagOf(departure!, 'p')).toBe(agent.pubkey)
    expect(tagOf(departure!, 'status')).toBe('expired')
    expect(await r.liveGauge()).toBe(0)
  })

  it('sends one "offline" departure for a goodbye, though a sweep reads the cleared lease before the goodbye is done', async () => {
    const r = start()
    const agent = makeKeys()
    await r.announce(agent)
    await r.heartbeat(agent)
    await waitTurns(() => r.heard.length === 1, 'the arrival')
    r.say({ type: 'Goodbye', pubkey: agent.pubkey })
    await r.presence.clear(C, agent.pubkey)
    r.say({ type: 'LeaseSweep' })
    await settle()
    expect(r.departures()).toEqual([])
    r.say({ type: 'GoodbyeDone', pubkey: agent.pubkey, cleared: true })
    await waitTurns(() => r.departures().length === 1, 'the departure')
    r.say({ type: 'LeaseSweep' })
    await settle()
    expect(r.departures().map((e) => tagOf(e, 'status'))).toEqual(['offline'])
  })

  it('departs an agent "offline" on its goodbye though a sweep that read its lease live is answered after the hold was given back', async () => {
    const r = start()
    const agent = makeKeys()
    await r.announce(agent)
    await r.heartbeat(agent)
    await waitTurns(() => r.heard.length === 1, 'the arrival')
    // the community gives the goodbye's hold back, then tells Goodbye: a sweep's answer read before the
    // clearing is queued ahead of it
    r.held.delete(agent.pubkey)
    r.say({ type: 'LeasesChecked', tracked: [agent.pubkey], live: new Set([agent.pubkey]) })
    r.say({ type: 'Goodbye', pubkey: agent.pubkey })
    await r.presence.clear(C, agent.pubkey)
    r.say({ type: 'GoodbyeDone', pubkey: agent.pubkey, cleared: true })
    await waitTurns(() => r.departures().length === 1, 'the departure')
    expect(tagOf(r.departures()[0]!, 'status')).toBe('offline')
  })

  it('leaves an agent to the sweep again when its goodbye could not clear the presence', async () => {
    const r = start()
    const agent = makeKeys()
    await r.announce(agent)
    await r.heartbeat(agent)
    await waitTurns(() => r.heard.length === 1, 'the arrival')
    r.say({ type: 'Goodbye', pubkey: agent.pubkey })
    r.say({ type: 'GoodbyeDone', pubkey: agent.pubkey, cleared: false })
    r.lapse()
    r.say({ type: 'LeaseSweep' })
    await waitTurns(() => r.departures().length === 1, 'the departure')
    expect(tagOf(r.departures()[0]!, 'status')).toBe('expired')
  })

  it('stops tracking an agent held by no connection of this node, without a departure: its own node tracks it', async () => {
    const r = start()
    const agent = makeKeys()
    await r.announce(agent)
    await r.heartbeat(agent)
    await waitTurns(() => r.heard.length === 1, 'the arrival')
    r.held.delete(agent.pubkey)
    r.say({ type: 'LeaseSweep' })
    await expect.poll(() => r.liveGauge()).toBe(0)
    expect(r.departures()).toEqual([])
  })

  it('forgets a check whose lookup never answers after transientMaxSeconds, and looks again at the next heartbeat', async () => {
    let lookups = 0
    const r = start({
      events: (real) => ({
        query: (c, filters, opts) => (++lookups === 1 ? new Promise(() => {}) : real.query(c, filters, opts)),
      }),
    })
    const agent = makeKeys()
    const ann = await r.announce(agent)
    await r.heartbeat(agent)
    await r.heartbeat(agent)
    await settle()
    expect(lookups).toBe(1)
    r.t.seconds += 2 * TTL_SECONDS + 1
    r.say({ type: 'LeaseSweep' })
    await r.heartbeat(agent)
    await waitTurns(() => r.heard.length === 1, 'the arrival')
    expect(lookups).toBe(2)
    expect(r.heard[0]!.events[0]!.raw).toBe(ann.raw)
  })

  it('keeps its tracked agents across a restart: a lease that lapses after a crash still gets its departure', async () => {
    let signs = 0
    const r = start({
      sign: (key, tpl, at) => {
        if (++signs === 1) throw new Error('relay key unavailable')
        return signAsRelay(key, tpl, at)
      },
    })
    const agent = makeKeys()
    await r.announce(agent)
    await r.heartbeat(agent)
    await waitTurns(() => r.heard.length === 1, 'the arrival')
    r.lapse()
    r.say({ type: 'LeaseSweep' })
    await r.log.waitFor('crashed', registryPath(C))
    r.clock.advance(60_000)
    await r.log.waitFor('restarted', registryPath(C))
    expect(await r.liveGauge()).toBe(1)
    r.say({ type: 'LeaseSweep' })
    await waitTurns(() => r.departures().length === 1, 'the departure')
    expect(tagOf(r.departures()[0]!, 'p')).toBe(agent.pubkey)
  })

  it('offers an arrival again while its community cannot take it, and it arrives once the community can', async () => {
    const r = start({ communityMailbox: 1 })
    const agent = makeKeys()
    await r.announce(agent)
    expect(tell(kernel.lookup<{ type: 'Block' }>('community/c')!, { type: 'Block' })).toBe(true)
    await waitTurns(() => r.blocked.length === 1, 'the community busy')
    await r.heartbeat(agent)
    await expect.poll(() => r.liveGauge()).toBe(1)
    r.clock.advance(1_000)
    await settle()
    expect(r.heard).toEqual([])
    r.blocked[0]!()
    await settle()
    r.clock.advance(500)
    await waitTurns(() => r.heard.length === 1, 'the arrival')
  })

  it('logs an arrival its community never takes (stopped)', async () => {
    const r = start()
    const agent = makeKeys()
    await r.announce(agent)
    await kernel.stop('community/c')
    await r.heartbeat(agent)
    await waitTurns(() => r.warnings.length === 1, 'the warning')
    expect(r.warnings[0]).toMatch(/not delivered/)
  })

  it('takes its agents out of the live gauge when it stops', async () => {
    const r = start()
    const agent = makeKeys()
    await r.announce(agent)
    await r.heartbeat(agent)
    await expect.poll(() => r.liveGauge()).toBe(1)
    await kernel.stop(registryPath(C))
    expect(await r.liveGauge()).toBe(0)
  })
})
