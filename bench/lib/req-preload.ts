// The REQ data set stored in each relay once per run: `req` queries it, `ingest-with-reads` copies Apiary's.
// The baseline is filled through its repository's own upsert inside its process (over the wire it would take
// minutes), and that file is cached in .bench-data/; strfry through its own `import`; Apiary over the wire, the
// real write path.
import { copyFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { BENCH_DATA_DIR, type Dataset, fixtureFile } from './fixtures'
import { ingestPipelined } from './load/ingest'
import { type RelayName, withRelay } from './relay-process'
import type { Context } from './scenario'

const preloaded = new Map<RelayName, Promise<string>>()

/** A directory holding `ds` for `name`, loaded once per run; every user copies it or only reads it. */
export function preloadOnce(name: RelayName, ds: Dataset, ctx: Context): Promise<string> {
  let dir = preloaded.get(name)
  if (!dir) {
    dir = name === 'baseline' ? preloadBaseline(ds, ctx) : name === 'strfry' ? preloadStrfry(ds, ctx) : preloadApiary(ds, ctx)
    preloaded.set(name, dir)
  }
  return dir
}

async function preloadBaseline(ds: Dataset, ctx: Context): Promise<string> {
  const dir = ctx.freshDir('baseline-req')
  const cacheFile = join(BENCH_DATA_DIR, `baseline-req-${ds.events.length}-${ds.events[0]!.id.slice(0, 12)}.sqlite`)
  if (existsSync(cacheFile)) {
    copyFileSync(cacheFile, join(dir, 'baseline.sqlite'))
    return dir
  }
  const stored = await withRelay('baseline', dir, (relay) => relay.prefill(fixtureFile('dataset'), ds.events.length))
  ctx.log(`    baseline: ${stored} events written straight into its repository`)
  // the relay closed its database (WAL checkpointed), so the file alone is the data set
  copyFileSync(join(dir, 'baseline.sqlite'), cacheFile)
  return dir
}

/** strfry's own `import`, without verifying (the fixtures are signed and checked when made) */
async function preloadStrfry(ds: Dataset, ctx: Context): Promise<string> {
  const dir = ctx.freshDir('strfry-req')
  const stored = await withRelay('strfry', dir, (relay) => relay.prefill(fixtureFile('dataset'), ds.events.length))
  ctx.log(`    strfry: ${stored} events imported`)
  return dir
}

async function preloadApiary(ds: Dataset, ctx: Context): Promise<string> {
  const dir = ctx.freshDir('apiary-req')
  const r = await withRelay('apiary', dir, (relay) => ingestPipelined(relay.url, { events: ds.events, connections: 4, window: 200 }))
  ctx.log(`    apiary: ${r.accepted}/${ds.events.length} accepted over the wire`)
  if (r.accepted < ds.events.length * 0.99)
    throw new Error(`only ${r.accepted}/${ds.events.length} events accepted: ${JSON.stringify(r.rejected)}`)
  return dir
}
