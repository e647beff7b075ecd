// The mesh port's budget for Hellos, per remote IP and node-local: a token bucket in memory, decided
// synchronously inside the handshake (tunnel-handshake.ts reads each message in its listener, with no await).
// Mesh peers dial each other a few times a minute; a stranger that sends Hellos by the thousand is refused
// before its Hello is even parsed. Not the principal limiter (docs/architecture.md §8): the mesh port serves no
// client, and its peers are processes of this cluster, not principals of a community.

export interface HelloBudget {
  /** take one Hello from `ip`'s bucket; false when it is spent */
  admit(ip: string): boolean
  /** `ip` has not a whole Hello left: its next connection is closed before it says anything */
  spent(ip: string): boolean
}

export interface HelloBudgetRule {
  perSecond: number
  burst: number
  /** IPs tracked at once; a new IP past it is refused until a bucket refills (never a spent one evicted) */
  maxIps: number
  /** the bucket an address spends from: its IP principal (an IPv6 client's network), so rotating addresses buys nothing */
  keyOf?: (ip: string) => string
}

interface Bucket {
  tokens: number
  atMs: number
}

export function createHelloBudget(rule: HelloBudgetRule, now: () => number = () => performance.now()): HelloBudget {
  const buckets = new Map<string, Bucket>()
  const refill = (b: Bucket, t: number) => {
    b.tokens = Math.min(rule.burst, b.tokens + ((t - b.atMs) / 1000) * rule.perSecond)
    b.atMs = t
  }
  /** forget the IPs whose bucket is full again: they would get the same fresh bucket back */
  const sweep = (t: number) => {
    for (const [ip, b] of buckets) {
      refill(b, t)
      if (b.tokens >= rule.burst) buckets.delete(ip)
    }
  }
  const keyOf = rule.keyOf ?? ((ip: string) => ip)
  return {
    spent(address) {
      const ip = keyOf(address)
      const b = buckets.get(ip)
      if (!b) {
        if (buckets.size >= rule.maxIps) sweep(now())
        return buckets.size >= rule.maxIps
      }
      refill(b, now())
      return b.tokens < 1
    },
    admit(address) {
      const ip = keyOf(address)
      const t = now()
      let b = buckets.get(ip)
      if (!b) {
        if (buckets.size >= rule.maxIps) sweep(t)
        if (buckets.size >= rule.maxIps) return false
        b = { tokens: rule.burst, atMs: t }
        buckets.set(ip, b)
      }
      refill(b, t)
      if (b.tokens < 1) return false
      b.tokens -= 1
      return true
    },
  }
}
