// The mesh fault tests' checker: clients on every node change the same channel while a fault is injected;
// every answer is recorded, and so is every version of the relay-signed state any node delivered live; the
// verdict compares them with the rows the database holds.
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys, signEvent, type TestKeys } from './events'
import type { MeshCluster, MeshNode } from './mesh-cluster'
import { connect, type TestClient } from './ws-client'

export type Op = {
  kind: 9000 | 9001 | 9002
  pubkey?: string
  answer: 'ok' | 'refused' | 'unknown'
  message: string
  atMs: number
  node: number
}

/** One writer: a connection to one node, changing one channel's membership for pubkeys of its own. */
export class Writer {
  readonly ops: Op[] = []
  /** its connection was lost (its node went away): it sends nothing more */
  gone = false
  private stopped = false
  private sent = 0
  private client: TestClient | undefined
  readonly pubkeys: string[]

  constructor(
    private readonly node: MeshNode,
    readonly index: number,
    private readonly cluster: MeshCluster,
    private readonly admin: TestKeys,
    private readonly channel: string,
    pubkeyCount = 6,
  ) {
    this.pubkeys = Array.from({ length: pubkeyCount }, () => makeKeys().pubkey)
  }

  /** put, remove, put, ... over its pubkeys, and an edit now and then, until stopped; a lost connection ends it */
  async run(pauseMs = 50): Promise<void> {
    let i = 0
    while (!this.stopped) {
      const pubkey = this.pubkeys[i % this.pubkeys.length]!
      const round = Math.floor(i / this.pubkeys.length)
      const kind = i % 7 === 6 ? 9002 : round % 2 === 0 ? 9000 : 9001
      const tags = kind === 9002 ? [['name', `round ${i}`]] : [['p', pubkey]]
      const ok = await this.send(kind, tags)
      if (ok === 'gone') {
        this.gone = true
        return
      }
      this.ops.push({ kind, pubkey: kind === 9002 ? undefined : pubkey, ...ok, atMs: performance.now(), node: this.index })
      i++
      await new Promise((r) => setTimeout(r, pauseMs))
    }
  }

  /** how many of its changes were acknowledged (OK true) after `sinceMs` (performance.now) */
  acknowledgedSince(sinceMs: number): number {
    return this.ops.filter((o) => o.answer === 'ok' && o.atMs > sinceMs).length
  }

  stop(): void {
    this.stopped = true
  }

  private async send(kind: number, tags: string[][]): Promise<Pick<Op, 'answer' | 'message'> | 'gone'> {
    try {
      this.client ??= await connect(this.node.url, { host: `${this.cluster.community}.test:${new URL(this.node.url).port}` })
      const c = this.client
      // a content of its own: two identical changes in one second would be one event (a duplicate, not applied twice)
      const e = signEvent(this.admin, { kind, tags: [['h', this.channel], ...tags], content: `writer ${this.index} op ${++this.sent}` })
      c.sendRaw(`["EVENT",${e.raw}]`)
      const frame = await Promise.race([c.next((f) => f[0] === 'OK' && f[1] === e.event.id, 30_000), c.closed.then(() => undefined)])
      if (!frame) {
        // the node went away with the event sent: it may have been applied
        this.ops.push({
          kind: kind as Op['kind'],
          pubkey: kind === 9002 ? undefined : tags[0]?.[1],
          answer: 'unknown',
          message: 'connection lost',
          atMs: performance.now(),
          node: this.index,
        })
        return 'gone'
      }
      const [, , accepted, message] = frame as [string, string, boolean, string]
      if (accepted) return { answer: 'ok', message }
      // `error:` means it may or may not have been applied; any other prefix was decided and refused
      return { answer: message.startsWith('error:') ? 'unknown' : 'refused', message }
    } catch {
      return 'gone'
    }
  }
}

/** Every relay-signed state version delivered live on one node, in arrival order. */
export class StateRecorder {
  readonly versions: { kind: number; created_at: number; generation: number; owner: string; pubkeys: string[]; id: string }[] = []
  private client: TestClient | undefined

  async start(node: MeshNode, cluster: MeshCluster, channel: string): Promise<void> {
    this.client = await connect(node.url, { host: `${cluster.community}.test:${new URL(node.url).port}` })
    this.client.ws.on('message', (data) => {
      const f = JSON.parse(data.toString()) as unknown[]
      if (f[0] !== 'EVENT' || f[1] !== 'state') return
      const e = f[2] as NostrEvent
      const g = e.tags.find((t) => t[0] === 'generation')
      this.versions.push({
        kind: e.kind,
        created_at: e.created_at,
        generation: Number(g?.[1] ?? 0),
        owner: g?.[2] ?? '',
        pubkeys: e.tags.filter((t) => t[0] === 'p').map((t) => t[1] ?? ''),
        id: e.id,
      })
    })
    this.client.send(['REQ', 'state', { kinds: [39000, 39001, 39002], '#d': [channel], since: Math.floor(Date.now() / 1000) - 5 }])
  }

  close(): void {
    this.client?.close()
  }
}

/**
 * The checker's verdict (empty when the run is correct): every acknowledged change is in the final rows; the
 * final 39002 equals the rows; no generation was written by two owners; no node delivered a version of an older
 * generation after one of a newer (a stale owner that woke up wrote nothing).
 */
export function checkRun(
  writers: Writer[],
  rows: Set<string>,
  final39002: Set<string>,
  admin: string,
  recorders: StateRecorder[],
): string[] {
  const problems: string[] = []
  for (const w of writers) {
    for (const pubkey of w.pubkeys) {
      const last = [...w.ops].reverse().find((o) => o.pubkey === pubkey)
      if (last?.answer !== 'ok') continue
      const member = rows.has(pubkey)
      const history = () =>
        w.ops
          .filter((o) => o.pubkey === pubkey)
          .map((o) => `${o.kind}:${o.answer}${o.answer === 'ok' ? '' : `(${o.message})`}`)
          .join(' ')
      if (last.kind === 9000 && !member)
        problems.push(`writer ${w.index}: acknowledged put-user of ${pubkey.slice(0, 8)} missing from the rows [${history()}]`)
      if (last.kind === 9001 && member)
        problems.push(`writer ${w.index}: acknowledged remove-user of ${pubkey.slice(0, 8)} still in the rows [${history()}]`)
    }
  }
  const expected = new Set([...rows, admin])
  if (expected.size !== final39002.size || [...expected].some((p) => !final39002.has(p))) {
    problems.push(`final 39002 (${final39002.size} members) differs from the rows (${expected.size})`)
  }
  const owners = new Map<number, Set<string>>()
  for (const r of recorders) {
    let newest = 0
    for (const v of r.versions) {
      owners.set(v.generation, (owners.get(v.generation) ?? new Set()).add(v.owner))
      if (v.generation < newest) problems.push(`a version of generation ${v.generation} arrived after one of generation ${newest}`)
      newest = Math.max(newest, v.generation)
    }
  }
  for (const [g, who] of owners) if (who.size > 1) problems.push(`generation ${g} written by ${who.size} owners`)
  return problems
}
