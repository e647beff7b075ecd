// Console sign-ins and NIP-07 challenges, behind one port: in memory on one node, in Redis in a cluster, where
// any node accepts a sign-in made on another. A session is found by its cookie; what is stored is keyed by the
// cookie's sha256, so the store never holds a cookie someone could replay.
import { createHash, randomBytes } from 'node:crypto'

/** What a sign-in records; the role and communities are re-read from the node at each request (scope.ts). */
export interface StoredSession {
  pubkey: string
  csrf: string
  expiresAtMs: number
}

export interface ConsoleSessions {
  put(token: string, session: StoredSession, ttlSeconds: number): Promise<void>
  /** undefined once it expired or was ended */
  get(token: string): Promise<StoredSession | undefined>
  end(token: string): Promise<void>
  /** a NIP-07 challenge good for one sign-in within `ttlSeconds` */
  offerChallenge(challengeHex: string, ttlSeconds: number): Promise<void>
  /** true once: the challenge was offered, is still live, and nobody took it before */
  takeChallenge(challengeHex: string): Promise<boolean>
}

// 32 random bytes: the cookie is the whole credential, so it is as hard to guess as a secret key.
const TOKEN_BYTES = 32
const TOKEN = /^[A-Za-z0-9_-]{43}$/

export const newSessionToken = (): string => randomBytes(TOKEN_BYTES).toString('base64url')
export const newChallengeHex = (): string => randomBytes(32).toString('hex')
export const isSessionToken = (s: string): boolean => TOKEN.test(s)
export const tokenHashHex = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex')

// Bounds one node's memory against a sign-in flood (each is already charged to its IP's api budget).
const MAX_MEMORY_ENTRIES = 10_000

/** One node's sessions; `nowMs` is a wall clock, as expiresAtMs is. */
export function createMemoryConsoleSessions(nowMs: () => number = Date.now): ConsoleSessions {
  const sessions = new Map<string, StoredSession>()
  const challenges = new Map<string, number>()
  const trim = <V>(map: Map<string, V>, expiryOf: (v: V) => number) => {
    const t = nowMs()
    for (const [k, v] of map) if (expiryOf(v) <= t) map.delete(k)
    // all live: the oldest go first (insertion order)
    for (const k of map.keys()) {
      if (map.size < MAX_MEMORY_ENTRIES) break
      map.delete(k)
    }
  }
  return {
    async put(token, session) {
      if (sessions.size >= MAX_MEMORY_ENTRIES) trim(sessions, (s) => s.expiresAtMs)
      sessions.set(tokenHashHex(token), session)
    },
    async get(token) {
      const key = tokenHashHex(token)
      const s = sessions.get(key)
      if (s === undefined || s.expiresAtMs > nowMs()) return s
      sessions.delete(key)
      return undefined
    },
    async end(token) {
      sessions.delete(tokenHashHex(token))
    },
    async offerChallenge(challengeHex, ttlSeconds) {
      if (challenges.size >= MAX_MEMORY_ENTRIES) trim(challenges, (expiry) => expiry)
      challenges.set(challengeHex, nowMs() + ttlSeconds * 1000)
    },
    async takeChallenge(challengeHex) {
      const expiry = challenges.get(challengeHex)
      challenges.delete(challengeHex)
      return expiry !== undefined && expiry > nowMs()
    },
  }
}
