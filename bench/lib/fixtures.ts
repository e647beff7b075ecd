// Pre-signed bench events, cached under .bench-data/fixtures/ so repeated runs never re-sign, and signed before
// any clock starts. Signing uses tiny-secp256k1 (libsecp256k1 in WASM), an order of magnitude faster than
// nostr-tools' finalizeEvent on @noble/curves; a sample of each set is cross-checked with nostr-tools' verifyEvent.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { verifyEvent } from 'nostr-tools/pure'
import * as ecc from 'tiny-secp256k1'
import type { NostrEvent } from '../built-package'

/** A signed event as the load generators send it: the relay's own wire type. */
export type BenchEvent = NostrEvent

export const BENCH_DATA_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.bench-data')
const FIXTURE_DIR = join(BENCH_DATA_DIR, 'fixtures')
const FORMAT_VERSION = 1
// Apiary refuses created_at older than a year (limits.createdAtPastSeconds): re-sign a cache well before that.
const MAX_CACHE_AGE_SECONDS = 180 * 86_400

/**
 * Deterministic 32-byte secret keys (sha256 of a label), so the author set is stable across runs. `first`: the
 * index of the first key, so processes that share one key set (the agents' load processes) each derive only theirs.
 */
export function benchKeys(count: number, label = 'apiary-bench', first = 0): { secret: Uint8Array; pubkey: string }[] {
  return Array.from({ length: count }, (_, j) => {
    const i = first + j
    let n = 0
    for (;;) {
      const secret = createHash('sha256').update(`${label}:${i}:${n}`).digest()
      if (ecc.isPrivate(secret)) return { secret, pubkey: Buffer.from(ecc.xOnlyPointFromScalar(secret)).toString('hex') }
      n++
    }
  })
}

export function signEvent(
  template: { kind: number; created_at: number; tags: string[][]; content: string },
  key: { secret: Uint8Array; pubkey: string },
): BenchEvent {
  const serialized = JSON.stringify([0, key.pubkey, template.created_at, template.kind, template.tags, template.content])
  const hash = createHash('sha256').update(serialized).digest()
  const sig = Buffer.from(ecc.signSchnorr(hash, key.secret)).toString('hex')
  return {
    id: hash.toString('hex'),
    pubkey: key.pubkey,
    created_at: template.created_at,
    kind: template.kind,
    tags: template.tags,
    content: template.content,
    sig,
  }
}

/** Small deterministic PRNG (mulberry32) so data sets and query sequences repeat exactly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

interface CacheHeader {
  version: number
  name: string
  count: number
  signedAt: number
}

/** Load `name` from the cache if it holds ≥ count fresh events, else generate, cross-check and store it. */
export function cached(name: string, count: number, generate: (count: number, now: number) => BenchEvent[]): BenchEvent[] {
  const file = fixtureFile(name)
  const now = Math.floor(Date.now() / 1000)
  if (existsSync(file)) {
    const text = readFileSync(file, 'utf8')
    const nl = text.indexOf('\n')
    const header = JSON.parse(text.slice(0, nl)) as CacheHeader
    if (header.version === FORMAT_VERSION && header.count >= count && now - header.signedAt < MAX_CACHE_AGE_SECONDS) {
      const lines = text.slice(nl + 1).split('\n')
      const out: BenchEvent[] = new Array(count)
      for (let i = 0; i < count; i++) out[i] = JSON.parse(lines[i]!) as BenchEvent
      return out
    }
  }
  const t0 = performance.now()
  const events = generate(count, now)
  for (let i = 0; i < events.length; i += Math.max(1, Math.floor(events.length / 10))) {
    if (!verifyEvent(structuredClone(events[i]!))) throw new Error(`fixture ${name}: event ${i} fails nostr-tools verifyEvent`)
  }
  mkdirSync(FIXTURE_DIR, { recursive: true })
  const header: CacheHeader = { version: FORMAT_VERSION, name, count, signedAt: now }
  const tmp = `${file}.tmp`
  writeFileSync(tmp, `${JSON.stringify(header)}\n${events.map((e) => JSON.stringify(e)).join('\n')}\n`)
  renameSync(tmp, file)
  process.stderr.write(`  (signed ${count} ${name} fixtures in ${((performance.now() - t0) / 1000).toFixed(1)} s → ${file})\n`)
  return events
}

export function fixtureFile(name: string): string {
  return join(FIXTURE_DIR, `${name}.jsonl`)
}

/**
 * Ingest/fan-out events: kind 1, tag t=bench, ~250 bytes of content, 16 authors, created_at in the last day
 * (distinct ids; all inside any relay's acceptance window).
 */
export function ingestEvents(count: number): BenchEvent[] {
  return cached('ingest', count, (n, now) => {
    const keys = benchKeys(16, 'ingest')
    const out: BenchEvent[] = []
    for (let i = 0; i < n; i++) {
      out.push(
        signEvent(
          {
            kind: 1,
            created_at: now - 86_400 + Math.floor((i * 86_000) / n),
            tags: [['t', 'bench']],
            content: `bench event ${i} `.repeat(14),
          },
          keys[i % keys.length]!,
        ),
      )
    }
    return out
  })
}

/**
 * Apiary's settings for a run that replays pre-signed NIP-29 channel history (signed before any clock starts,
 * or cached across runs): its late-publication windows would refuse changes and posts signed that long before.
 */
export const PRESIGNED_CHANNEL_CONFIG = { channels: { maxModerationAgeSeconds: 31_536_000, maxPostAgeSeconds: 0 } }

/** The channel every `channelPostEvents` post goes to (a fresh relay or database each run, so no clash). */
export const INGEST_CHANNEL_ID = 'bench-ingest'
/** Authors of `channelPostEvents`, as many as `ingestEvents` has: authors[0] creates the channel. */
export const channelIngestKeys = () => benchKeys(16, 'channel-ingest')

/**
 * The kind-9 twin of `ingestEvents` for NIP-29 ingest: the same 16-author, ~250-byte shape, posted to the
 * public channel INGEST_CHANNEL_ID. `setup` is the creator's 9007 and one 9000 put-user per other author
 * (every author a member), created before every post; `posts` are `count` kind 9 with its `h` tag.
 */
export function channelPostEvents(count: number): { setup: BenchEvent[]; posts: BenchEvent[] } {
  const keys = channelIngestKeys()
  const setupCount = keys.length
  const all = cached('channel-ingest', setupCount + count, (n, now) => {
    const start = now - 86_400 - 3_600
    const h = ['h', INGEST_CHANNEL_ID]
    const out = [signEvent({ kind: 9007, created_at: start, tags: [h, ['name', INGEST_CHANNEL_ID]], content: '' }, keys[0]!)]
    for (const k of keys.slice(1)) out.push(signEvent({ kind: 9000, created_at: start, tags: [h, ['p', k.pubkey]], content: '' }, keys[0]!))
    const posts = n - setupCount
    for (let i = 0; i < posts; i++) {
      const created_at = now - 86_400 + Math.floor((i * 86_000) / posts)
      out.push(signEvent({ kind: 9, created_at, tags: [h], content: `bench event ${i} `.repeat(14) }, keys[i % keys.length]!))
    }
    return out
  })
  return { setup: all.slice(0, setupCount), posts: all.slice(setupCount) }
}

export interface Dataset {
  events: BenchEvent[]
  authors: string[]
  topics: string[]
  /** created_at range of the stored events */
  since: number
  until: number
}

export const DATASET_AUTHORS = 300
export const DATASET_TOPICS = 50
const DATASET_SPAN_SECONDS = 30 * 86_400

/**
 * REQ data set: 300 authors; one kind 0 per author (replaceable, so only one each), then kind 1 notes (~75%)
 * with one or two `t` tags (50 topics, skewed) and sometimes a `p` mention, and kind 7 reactions (~25%) with
 * `e` and `p` tags. created_at spread over the last 30 days, ascending.
 */
export function reqDataset(count: number): Dataset {
  const events = cached('dataset', count, (n, now) => {
    const keys = benchKeys(DATASET_AUTHORS, 'dataset')
    const rand = prng(42)
    const start = now - DATASET_SPAN_SECONDS - 3_600
    const out: BenchEvent[] = []
    for (let a = 0; a < keys.length && out.length < n; a++) {
      out.push(
        signEvent(
          { kind: 0, created_at: start, tags: [], content: JSON.stringify({ name: `bench-${a}`, about: 'apiary bench author' }) },
          keys[a]!,
        ),
      )
    }
    const ids: string[] = []
    while (out.length < n) {
      const i = out.length
      const created_at = start + 1 + Math.floor((i * DATASET_SPAN_SECONDS) / n)
      // Zipf-ish author choice: a few prolific authors, a long tail
      const key = keys[Math.floor(rand() ** 2 * keys.length)]!
      const mention = keys[Math.floor(rand() * keys.length)]!.pubkey
      let e: BenchEvent
      if (rand() < 0.25 && ids.length > 0) {
        const target = ids[Math.floor(rand() * ids.length)]!
        e = signEvent(
          {
            kind: 7,
            created_at,
            tags: [
              ['e', target],
              ['p', mention],
            ],
            content: '+',
          },
          key,
        )
      } else {
        const tags: string[][] = [['t', `topic${Math.floor(rand() ** 1.5 * DATASET_TOPICS)}`]]
        if (rand() < 0.3) tags.push(['t', `topic${Math.floor(rand() * DATASET_TOPICS)}`])
        if (rand() < 0.4) tags.push(['p', mention])
        e = signEvent(
          { kind: 1, created_at, tags, content: `note ${i}: ${'lorem ipsum dolor sit amet '.repeat(1 + Math.floor(rand() * 6))}` },
          key,
        )
        ids.push(e.id)
      }
      out.push(e)
    }
    return out
  })
  return {
    events,
    authors: benchKeys(DATASET_AUTHORS, 'dataset').map((k) => k.pubkey),
    topics: Array.from({ length: DATASET_TOPICS }, (_, i) => `topic${i}`),
    since: events[0]!.created_at,
    until: events[events.length - 1]!.created_at,
  }
}
