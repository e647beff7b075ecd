import { type EventStore, type QueryOptions, type SaveOutcome, type StoredEvent, StoreError } from '../../src/infra/store/event-store'
import { openSqliteEventStore } from '../../src/infra/store/sqlite/sqlite-event-store'
import type { VerifiedEvent } from '../../src/protocols/nip01/event'
import type { Filter } from '../../src/protocols/nip01/filter'

export type ReadOp = 'query' | 'count'

/**
 * When a held read asks the real store: `after-release` (the default) asks it once released, so the answer
 * includes what was written during the hold; `before-hold` asks it when the call arrives and keeps that
 * answer until the release, as a read whose snapshot was taken before the writes during the hold.
 */
export type Snapshot = 'after-release' | 'before-hold'

export interface HoldOptions {
  /** which read to hold: the first call of `op` whose filters this accepts, once armed */
  when: (filters: readonly Filter[]) => boolean
  snapshot?: Snapshot
}

/** One armed hold: it catches one read and keeps it until `release()` or `fail()`. */
export interface Hold {
  /** resolves with the held call's filters once it reached the store (it is held from then on) */
  readonly entered: Promise<readonly Filter[]>
  /** answer the held call (see Snapshot for what it answers) */
  release(): void
  /** reject the held call with `error`, as a store whose backend went away mid-read */
  fail(error?: StoreError): void
  /** resolves once the held call has been answered or rejected (its caller has the outcome) */
  readonly settled: Promise<void>
}

/** A write the store committed whose outcome is kept from its caller until `release()`. */
export interface HeldAnswer {
  /** resolves once the write committed: reads see it from then on, while its caller still waits */
  readonly committed: Promise<SaveOutcome>
  release(): void
}

/**
 * The real EventStore with chosen reads held until the test releases them: a read as slow as the test needs,
 * with no sleep. Reads that no hold matches, and every write, go straight to the real store. For what a slow
 * backend can't be made to do on cue (test/faults/slow-read.test.ts).
 */
export interface SlowEventStore {
  store: EventStore
  hold(op: ReadOp, opts: HoldOptions): Hold
  /** the first save of an event `when` accepts commits at once; its outcome reaches the caller on release */
  holdSaveAnswer(when: (event: VerifiedEvent) => boolean): HeldAnswer
  /** disarm every hold and reject every held call (a test that failed before its release, or a close) */
  abandon(): void
}

/** Filters carrying `#t: [value]` in one of them: a marker a test puts in a REQ it wants held. */
export const hasTag = (value: string) => (filters: readonly Filter[]) => filters.some((f) => f.tags?.t?.includes(value) === true)

interface Armed {
  op: ReadOp
  opts: HoldOptions
  enter(filters: readonly Filter[]): void
  /** what the test decided for the held call: answer it, or reject it with this error */
  decided: Promise<'release' | StoreError>
  decide(d: 'release' | StoreError): void
  settle(): void
}

interface ArmedSave {
  when: (event: VerifiedEvent) => boolean
  commit(o: SaveOutcome): void
  released: Promise<void>
  release(): void
}

export function withHolds(inner: EventStore): SlowEventStore {
  const armed: Armed[] = []
  const caught = new Set<Armed>()
  const saves: ArmedSave[] = []
  const answersHeld = new Set<ArmedSave>()

  function save(community: string, event: VerifiedEvent, raw: string): Promise<SaveOutcome> {
    const i = saves.findIndex((a) => a.when(event))
    if (i < 0) return inner.save(community, event, raw)
    const a = saves.splice(i, 1)[0]!
    answersHeld.add(a)
    void a.released.then(() => answersHeld.delete(a))
    const outcome = inner.save(community, event, raw)
    outcome.then(a.commit, () => {})
    return Promise.all([outcome, a.released]).then(([o]) => o)
  }

  function held<T>(op: ReadOp, filters: Filter[], ask: () => Promise<T>): Promise<T> {
    const i = armed.findIndex((a) => a.op === op && a.opts.when(filters))
    if (i < 0) return ask()
    const a = armed.splice(i, 1)[0]!
    caught.add(a)
    a.enter(filters)
    const early = a.opts.snapshot === 'before-hold' ? ask() : undefined
    // an early answer the test then fails must not surface as an unhandled rejection
    early?.catch(() => {})
    return a.decided
      .then((d) => {
        if (d instanceof StoreError) throw d
        return early ?? ask()
      })
      .finally(() => {
        caught.delete(a)
        a.settle()
      })
  }

  const abandon = () => {
    armed.splice(0)
    saves.splice(0)
    for (const a of caught) a.decide(new StoreError('event store is closed'))
    for (const a of answersHeld) a.release()
  }

  return {
    abandon,
    store: {
      save,
      query: (c: string, f: Filter[], o: QueryOptions): Promise<StoredEvent[]> => held('query', f, () => inner.query(c, f, o)),
      count: (c: string, f: Filter[], o: QueryOptions): Promise<number> => held('count', f, () => inner.count(c, f, o)),
      deleteEvents: (c, ids) => inner.deleteEvents(c, ids),
      ping: () => inner.ping(),
      async close() {
        abandon()
        await inner.close()
      },
    },
    hold(op, opts) {
      let enter!: (f: readonly Filter[]) => void
      let decide!: (d: 'release' | StoreError) => void
      let settle!: () => void
      const entered = new Promise<readonly Filter[]>((resolve) => {
        enter = resolve
      })
      const decided = new Promise<'release' | StoreError>((resolve) => {
        decide = resolve
      })
      const settled = new Promise<void>((resolve) => {
        settle = resolve
      })
      armed.push({ op, opts, enter, decided, decide, settle })
      return {
        entered,
        settled,
        release: () => decide('release'),
        fail: (error = new StoreError(`held ${op} failed: backend gone`)) => decide(error),
      }
    },
    holdSaveAnswer(when) {
      let commit!: (o: SaveOutcome) => void
      let release!: () => void
      const committed = new Promise<SaveOutcome>((resolve) => {
        commit = resolve
      })
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      saves.push({ when, commit, released, release })
      return { committed, release }
    },
  }
}

/** The real SQLite EventStore in `file`, with holds (the group-commit settings of openFailingSqliteStore). */
export function openSlowSqliteStore(file: string): SlowEventStore {
  return withHolds(openSqliteEventStore({ file, groupCommitMaxEvents: 100, groupCommitMaxDelayMs: 0 }))
}
