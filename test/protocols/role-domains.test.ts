import { describe, expect, it } from 'vitest'
import { prefixOf } from '../../src/protocols/reasons'
import {
  checkRoleDomains,
  MAX_ROLE_RULES,
  mayAddress,
  parseSetAgentRoleParams,
  parseSetChannelRolesParams,
  parseSetRoleDomainParams,
  type RolePolicy,
  withChannelRoles,
  withRule,
} from '../../src/protocols/role-domains'

const [WORKER, AUDITOR, PLANNER, BARE, PERSON] = ['a', 'b', 'c', 'd', 'e'].map((c) => c.repeat(64)) as [
  string,
  string,
  string,
  string,
  string,
]
const ROSTER = new Map<string, string | null>([
  [WORKER, 'worker'],
  [AUDITOR, 'auditor'],
  [PLANNER, 'planner'],
  [BARE, null],
])
const roleOf = (p: string) => ROSTER.get(p)
const POLICY: RolePolicy = {
  rules: [{ from: 'planner', to: ['worker'] }],
  channels: [{ channel: 'ops', roles: ['worker', 'planner'] }],
}
const event = (pubkey: string, tags: string[][] = []) => ({ pubkey, tags })
const verdict = (e: ReturnType<typeof event>, policy = POLICY) => prefixOf(checkRoleDomains(e, policy, roleOf) ?? '') ?? 'allowed'

describe('role domains', () => {
  it.each([
    ['a planner addressing a worker (a rule allows it)', event(PLANNER, [['p', WORKER]]), 'allowed'],
    ['a worker addressing a worker (its own role)', event(WORKER, [['p', WORKER]]), 'allowed'],
    ['a worker addressing a planner (no rule for worker)', event(WORKER, [['p', PLANNER]]), 'restricted'],
    ['a planner addressing an auditor (not in its rule)', event(PLANNER, [['p', AUDITOR]]), 'restricted'],
    ['an auditor addressing a person (people have no domain)', event(AUDITOR, [['p', PERSON]]), 'allowed'],
    ['an auditor addressing an agent without a role', event(AUDITOR, [['p', BARE]]), 'allowed'],
    ['a person addressing an auditor (people are not restricted)', event(PERSON, [['p', AUDITOR]]), 'allowed'],
    ['an agent without a role addressing an auditor', event(BARE, [['p', AUDITOR]]), 'allowed'],
    ['a worker posting in ops (its role is listed)', event(WORKER, [['h', 'ops']]), 'allowed'],
    ['an auditor posting in ops', event(AUDITOR, [['h', 'ops']]), 'restricted'],
    ['an agent without a role posting in ops', event(BARE, [['h', 'ops']]), 'restricted'],
    ['a person posting in ops (channels restrict agents only)', event(PERSON, [['h', 'ops']]), 'allowed'],
    ['an auditor posting in another channel', event(AUDITOR, [['h', 'lobby']]), 'allowed'],
    [
      'one disallowed target among allowed ones',
      event(PLANNER, [
        ['p', WORKER],
        ['p', AUDITOR],
      ]),
      'restricted',
    ],
  ])('%s: %s', (_what, e, expected) => {
    expect(verdict(e)).toBe(expected)
  })

  const FRESH = 'f'.repeat(64)
  it.each([
    ["a key a worker attested addressing a planner (the worker's rule)", event(FRESH, [['p', PLANNER]]), WORKER, 'restricted'],
    ['a key a worker attested addressing a worker', event(FRESH, [['p', WORKER]]), WORKER, 'allowed'],
    ['a key a worker attested posting in ops', event(FRESH, [['h', 'ops']]), WORKER, 'allowed'],
    ['a key an auditor attested posting in ops', event(FRESH, [['h', 'ops']]), AUDITOR, 'restricted'],
    ['a key an agent without a role attested posting in ops', event(FRESH, [['h', 'ops']]), BARE, 'restricted'],
    ["a key a person attested addressing a planner (a person's key)", event(FRESH, [['p', PLANNER]]), PERSON, 'allowed'],
    ['a key a person attested posting in ops', event(FRESH, [['h', 'ops']]), PERSON, 'allowed'],
    ['a planner attested by a worker keeps its own role', event(PLANNER, [['p', WORKER]]), WORKER, 'allowed'],
  ])('an attested author, %s: %s', (_what, e, owner, expected) => {
    expect(prefixOf(checkRoleDomains(e, POLICY, roleOf, owner) ?? '') ?? 'allowed').toBe(expected)
  })

  it('restricts no addressing while the community has no rule', () => {
    expect(verdict(event(WORKER, [['p', AUDITOR]]), { rules: [], channels: [] })).toBe('allowed')
  })

  it('lets a job of one agent go to another as its addressing would (the roster alone judges both)', () => {
    const may = (from: string, to: string, rules = POLICY.rules) => mayAddress(rules, roleOf, from, to)
    expect([may(PLANNER, WORKER), may(WORKER, WORKER), may(PLANNER, AUDITOR), may(WORKER, PLANNER)]).toEqual([true, true, false, false])
    expect([may(PERSON, AUDITOR), may(BARE, AUDITOR), may(AUDITOR, PERSON), may(AUDITOR, BARE)]).toEqual([true, true, true, true])
    expect(may(WORKER, PLANNER, [])).toBe(true)
  })

  it('names both roles in the refusal', () => {
    expect(checkRoleDomains(event(WORKER, [['p', PLANNER]]), POLICY, roleOf)).toBe(
      'restricted: agents of role worker may not address agents of role planner',
    )
  })
})

describe('role domain params', () => {
  it('parses setagentrole, with "" for no role, and refuses bad pubkeys and roles with invalid:', () => {
    expect(parseSetAgentRoleParams([WORKER, 'worker'])).toEqual({ ok: true, value: { pubkey: WORKER, role: 'worker' } })
    expect(parseSetAgentRoleParams([WORKER, ''])).toEqual({ ok: true, value: { pubkey: WORKER, role: null } })
    for (const bad of [[WORKER.toUpperCase(), 'worker'], [WORKER, 'Worker'], [WORKER, 'x'.repeat(33)], [WORKER], [WORKER, 7]])
      expect(parseSetAgentRoleParams(bad)).toMatchObject({ ok: false, error: expect.stringMatching(/^invalid: /) })
    expect(parseSetAgentRoleParams([WORKER, 'x'.repeat(32)]).ok).toBe(true)
  })

  it('parses setroledomain and setchannelroles, deduplicating roles', () => {
    expect(parseSetRoleDomainParams(['planner', ['worker', 'worker']])).toEqual({ ok: true, value: { from: 'planner', to: ['worker'] } })
    expect(parseSetRoleDomainParams(['planner', []])).toEqual({ ok: true, value: { from: 'planner', to: [] } })
    expect(parseSetRoleDomainParams(['planner', 'worker']).ok).toBe(false)
    expect(parseSetChannelRolesParams(['ops', ['worker']])).toEqual({ ok: true, value: { channel: 'ops', roles: ['worker'] } })
    expect(parseSetChannelRolesParams(['', ['worker']]).ok).toBe(false)
    expect(parseSetChannelRolesParams(['ops', ['BAD']]).ok).toBe(false)
  })

  it('replaces one rule, removes it with no roles, and holds at most MAX_ROLE_RULES rules', () => {
    const one = withRule([], { from: 'planner', to: ['worker'] })
    expect(one).toEqual({ ok: true, value: [{ from: 'planner', to: ['worker'] }] })
    expect(withRule(one.ok ? one.value : [], { from: 'planner', to: ['auditor'] })).toEqual({
      ok: true,
      value: [{ from: 'planner', to: ['auditor'] }],
    })
    expect(withRule(one.ok ? one.value : [], { from: 'planner', to: [] })).toEqual({ ok: true, value: [] })
    const full = Array.from({ length: MAX_ROLE_RULES }, (_, i) => ({ from: `r${i}`, to: ['x'] }))
    expect(withRule(full.slice(1), { from: 'new', to: ['x'] }).ok).toBe(true)
    expect(withRule(full, { from: 'new', to: ['x'] })).toMatchObject({ ok: false, error: expect.stringMatching(/^invalid: /) })
    expect(withChannelRoles([{ channel: 'ops', roles: ['a'] }], { channel: 'ops', roles: [] })).toEqual({ ok: true, value: [] })
  })
})
