// The default ingest corpus: an event mix like a public relay's traffic, deterministic (seeded) and
// pre-signed once (cached under .bench-data/fixtures/ like every fixture). Kinds: 1 (70 %), 7 (15 %), 0 and 3
// (5 %; a kind 3 carries 5–200 `p` tags), 30023 (5 %, five `d` values per author), 6/16/1111/9802 (5 %);
// 1,000 authors, the prolific ones Zipf-weighted; `#e`, `#p`, `#t` values drawn from Zipf-popular pools; content
// 50–1,000 bytes (reactions `+` or an emoji); created_at ascending over the 30 days before signing, so the
// replaceable and addressable versions of one author arrive in order and each replaces the one before.
import { type BenchEvent, benchKeys, cached, prng, signEvent } from './fixtures'

export const CORPUS_AUTHORS = 1_000
const CORPUS_TOPICS = 500
/** events whose ids reactions, reposts and replies point at (the earliest kind-1 notes, Zipf-weighted) */
const POPULAR_NOTES = 2_000
const SPAN_SECONDS = 30 * 86_400
const WORDS =
  'the relay agent channel nostr event signal queue note thread reply river mountain pixel garden coffee market protocol lattice moon'.split(
    ' ',
  )
const EMOJI = ['🤙', '🔥', '❤️', '😂', '👀', '⚡', '🫡']

/** Samples ranks 0..n-1 with P(k) ∝ 1/(k+1)^s (inverse CDF by binary search). */
function zipf(n: number, s: number, rand: () => number): () => number {
  const cdf = new Float64Array(n)
  let sum = 0
  for (let k = 0; k < n; k++) {
    sum += 1 / (k + 1) ** s
    cdf[k] = sum
  }
  return () => {
    const u = rand() * sum
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (cdf[mid]! < u) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/** The corpus' first `count` events (a prefix of the cached corpus when it holds more). */
export function corpusEvents(count: number): BenchEvent[] {
  return cached('corpus', count, generateCorpus)
}

function generateCorpus(n: number, now: number): BenchEvent[] {
  const keys = benchKeys(CORPUS_AUTHORS, 'corpus')
  const rand = prng(1313)
  const author = zipf(CORPUS_AUTHORS, 0.8, rand)
  const mentioned = zipf(CORPUS_AUTHORS, 1.0, rand)
  const topic = zipf(CORPUS_TOPICS, 1.0, rand)
  const popular = zipf(POPULAR_NOTES, 1.0, rand)
  const between = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1))
  const text = (minBytes: number, maxBytes: number) => {
    const target = between(minBytes, maxBytes)
    let s = ''
    while (s.length < target) s += `${WORDS[Math.floor(rand() * WORDS.length)]} `
    return s.slice(0, target)
  }
  const notes: string[] = []
  const noteRef = () => notes[Math.min(notes.length - 1, popular())]!
  const p = () => ['p', keys[mentioned()]!.pubkey]
  const t = () => ['t', `topic${topic()}`]
  /** a repost (6, 16), a comment (1111) or a highlight (9802) of the note `target` */
  const referring = (kind: number, target: string): { tags: string[][]; content: string } => {
    switch (kind) {
      case 6:
        return { tags: [['e', target], p()], content: '' }
      case 16:
        return { tags: [['e', target], p(), ['k', '1']], content: '' }
      case 1111:
        return { tags: [['E', target], ['K', '1'], ['e', target], ['k', '1'], p()], content: text(50, 600) }
      default:
        return { tags: [['e', target], p()], content: text(50, 400) }
    }
  }
  const start = now - SPAN_SECONDS
  const out: BenchEvent[] = []
  for (let i = 0; i < n; i++) {
    const created_at = start + Math.floor((i * SPAN_SECONDS) / n)
    const key = keys[author()]!
    const r = rand()
    let kind: number
    let tags: string[][] = []
    let content: string
    if (r < 0.7 || notes.length === 0) {
      kind = 1
      for (let k = between(0, 3); k > 0; k--) tags.push(t())
      for (let k = between(0, 2); k > 0; k--) tags.push(p())
      if (notes.length > 0 && rand() < 0.3) tags.push(['e', noteRef(), '', 'reply'])
      content = text(50, 1_000)
    } else if (r < 0.85) {
      kind = 7
      tags = [['e', noteRef()], p(), ['k', '1']]
      content = rand() < 0.6 ? '+' : EMOJI[Math.floor(rand() * EMOJI.length)]!
    } else if (r < 0.9) {
      if (rand() < 0.5) {
        kind = 0
        content = JSON.stringify({
          name: `author-${key.pubkey.slice(0, 8)}`,
          about: text(30, 300),
          picture: `https://example.com/${key.pubkey.slice(0, 16)}.png`,
        })
      } else {
        kind = 3
        for (let k = between(5, 200); k > 0; k--) tags.push(p())
        content = ''
      }
    } else if (r < 0.95) {
      kind = 30023
      tags = [['d', `article-${between(0, 4)}`], ['title', text(10, 60)], t(), ['published_at', String(created_at)]]
      content = text(300, 1_000)
    } else {
      kind = [6, 16, 1111, 9802][between(0, 3)]!
      const ref = referring(kind, noteRef())
      tags = ref.tags
      content = ref.content
    }
    const e = signEvent({ kind, created_at, tags, content }, key)
    if (kind === 1) notes.push(e.id)
    out.push(e)
  }
  return out
}

/** A one-line description of a corpus prefix: kinds, tags, bytes (printed in the bench notes). */
export function describeCorpus(events: readonly BenchEvent[]): string {
  const kinds = new Map<number, number>()
  let tags = 0
  let bytes = 0
  for (const e of events) {
    kinds.set(e.kind, (kinds.get(e.kind) ?? 0) + 1)
    tags += e.tags.length
    bytes += JSON.stringify(e).length
  }
  const share = [...kinds.entries()].sort((a, b) => b[1] - a[1]).map(([k, c]) => `${k}: ${((c / events.length) * 100).toFixed(1)} %`)
  return `${events.length} events (${share.join(', ')}), ${(tags / events.length).toFixed(1)} tags and ${Math.round(bytes / events.length)} bytes per event on average`
}
