// Every BENCH_* environment variable the bench reads, parsed in this one place (bench/README.md has their
// table). The relay child, the load shards and the runner all read them from here: a child inherits the
// runner's environment, so one setting reaches every process it concerns.

const text = (name: string): string | undefined => process.env[name] || undefined
const words = (name: string): string[] => text(name)?.split(' ').filter(Boolean) ?? []

function allocationKeep(): 'all' | 'survivors' | 'live' {
  const keep = text('BENCH_ALLOCATION_PROFILE_KEEP') ?? 'all'
  if (keep !== 'all' && keep !== 'survivors' && keep !== 'live')
    throw new Error(`BENCH_ALLOCATION_PROFILE_KEEP is survivors or live, not ${keep}`)
  return keep
}

export const knobs = {
  /** Redis of the cluster scenarios */
  redisUrl: text('BENCH_REDIS_URL') ?? 'redis://127.0.0.1:6379',
  /** a superuser's URL: its database only creates and drops the bench databases */
  postgresAdminUrl: text('BENCH_POSTGRES_URL') ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  /** JSON config (a ConfigInput) merged into every Apiary relay child, under the scenario's own settings */
  apiaryConfig: JSON.parse(text('BENCH_APIARY_CONFIG') ?? '{}') as Record<string, unknown>,
  /** extra node flags for every relay child, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` */
  childNodeArgs: words('BENCH_CHILD_NODE_ARGS'),
  /** a file the relay child's stdout is appended to (where `--trace-gc*` prints) */
  childStdout: text('BENCH_CHILD_STDOUT'),
  /** extra node flags for the agents scenario's load processes (not its probe) */
  agentsLoadNodeArgs: words('BENCH_AGENTS_LOAD_NODE_ARGS'),
  /** a directory: V8's CPU profile of the relay child over each measured span */
  cpuProfileDir: text('BENCH_CPU_PROFILE'),
  /** a directory: V8's sampling allocation profile of the relay child over each measured span */
  allocationProfileDir: text('BENCH_ALLOCATION_PROFILE'),
  /** which allocations that profile keeps: all, those that survived a scavenge, or those still alive */
  allocationProfileKeep: allocationKeep(),
  /** a directory: two heap snapshots of the relay child, 3 s apart, 5 s into each measured span */
  heapSnapshotDir: text('BENCH_HEAP_SNAPSHOTS'),
  /** a strfry binary (built outside this repository): strfry becomes a third relay in the comparisons */
  strfryBin: text('STRFRY_BIN'),
  /** a directory: GC pauses and event-loop stalls with wall-clock times, and the probe's handshakes */
  timelineDir: text('BENCH_TIMELINE'),
}
