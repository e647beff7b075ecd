import { describe, expect, it } from 'vitest'
import { createHelloBudget } from '../../../src/infra/mesh/hello-budget'
import { toIpPrincipal } from '../../../src/protocols/ip-address'

describe('mesh Hello budget', () => {
  it('admits a burst per IP, then one Hello per refill interval, each IP on its own', () => {
    let now = 0
    const budget = createHelloBudget({ perSecond: 2, burst: 3, maxIps: 10 }, () => now)
    expect([1, 2, 3, 4].map(() => budget.admit('10.0.0.1'))).toEqual([true, true, true, false])
    expect(budget.spent('10.0.0.1')).toBe(true)
    expect(budget.admit('10.0.0.2')).toBe(true)
    now += 500
    expect([budget.admit('10.0.0.1'), budget.admit('10.0.0.1')]).toEqual([true, false])
  })

  it('never hands an IP a fresh bucket by forgetting a spent one: a new IP past the bound is refused instead', () => {
    let now = 0
    const budget = createHelloBudget({ perSecond: 1, burst: 1, maxIps: 2 }, () => now)
    expect([budget.admit('a'), budget.admit('b')]).toEqual([true, true])
    expect([budget.admit('c'), budget.spent('c')]).toEqual([false, true])
    expect(budget.admit('a')).toBe(false)
    // once a bucket is full again, forgetting it gives nothing away: the new IP takes its place
    now += 1_000
    expect(budget.admit('c')).toBe(true)
  })
})

describe('mesh Hello budget keyed on the IP principal', () => {
  it('charges every address of one IPv6 /64 to one bucket, so rotating addresses buys no more Hellos', () => {
    const keyOf = (ip: string) => {
      const p = toIpPrincipal(ip, 64)
      return p.ok ? p.value : ip
    }
    const budget = createHelloBudget({ perSecond: 1, burst: 2, maxIps: 100, keyOf }, () => 0)
    expect(['2001:db8::1', '2001:db8::2', '2001:db8::3'].map((ip) => budget.admit(ip))).toEqual([true, true, false])
    expect(budget.spent('2001:db8::ffff')).toBe(true)
    // another network has its own
    expect(budget.admit('2001:db8:0:1::1')).toBe(true)
  })
})
