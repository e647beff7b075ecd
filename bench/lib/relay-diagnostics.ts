// The relay child's profiling over a measured span, each switched on by its knob (bench/knobs.ts): V8's CPU
// profile, its sampling allocation profile, and a pair of heap snapshots. They are written by the child
// itself when the span ends, so a relay that is later SIGKILLed still leaves them.
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector'
import { writeHeapSnapshot } from 'node:v8'
import { knobs } from '../knobs'

type Stop = () => Promise<void>

/** Starts whatever the knobs ask for; the returned function ends the span and writes the files. */
export function startDiagnostics(): Stop {
  const stops: Stop[] = []
  if (knobs.heapSnapshotDir) snapshotPair(knobs.heapSnapshotDir)
  if (knobs.allocationProfileDir) stops.push(startAllocationProfile(knobs.allocationProfileDir))
  if (knobs.cpuProfileDir) stops.push(startCpuProfile(knobs.cpuProfileDir))
  return async () => {
    for (const stop of stops) await stop()
  }
}

/** An inspector session on this process: `post` a DevTools Protocol method and get its result. */
function inspectorSession(): { post(method: string, params?: object): Promise<unknown>; disconnect(): void } {
  const session = new Session()
  session.connect()
  return {
    post: (method, params) => new Promise((resolve, reject) => session.post(method, params ?? {}, (e, r) => (e ? reject(e) : resolve(r)))),
    disconnect: () => session.disconnect(),
  }
}

/** A sample every ~32 KB allocated, to `dir/alloc-<pid>.heapprofile` (DevTools opens it). */
function startAllocationProfile(dir: string): Stop {
  const { post, disconnect } = inspectorSession()
  const keep = knobs.allocationProfileKeep
  const started = post('HeapProfiler.startSampling', {
    samplingInterval: 32_768,
    includeObjectsCollectedByMajorGC: keep !== 'live',
    includeObjectsCollectedByMinorGC: keep === 'all',
  })
  // a failed start is reported by the stop that awaits it
  started.catch(() => {})
  return async () => {
    await started
    // without a scavenge first, the young garbage of the last seconds would count as having survived one
    if (keep === 'survivors') (globalThis as { gc?: (o: object) => void }).gc?.({ type: 'minor', execution: 'sync' })
    const { profile } = (await post('HeapProfiler.stopSampling')) as { profile: unknown }
    writeFileSync(`${dir}/alloc-${process.pid}.heapprofile`, JSON.stringify(profile))
    disconnect()
  }
}

/** A sample every 250 µs, to `dir/cpu-<pid>.cpuprofile`. */
function startCpuProfile(dir: string): Stop {
  const { post, disconnect } = inspectorSession()
  const started = post('Profiler.enable')
    .then(() => post('Profiler.setSamplingInterval', { interval: 250 }))
    .then(() => post('Profiler.start'))
  started.catch(() => {})
  return async () => {
    await started
    const { profile } = (await post('Profiler.stop')) as { profile: unknown }
    writeFileSync(`${dir}/cpu-${process.pid}.cpuprofile`, JSON.stringify(profile))
    disconnect()
  }
}

/** Objects new in the second snapshot and alive in it are what the young generation copies and promotes. */
function snapshotPair(dir: string): void {
  const at = (name: string) => () => writeHeapSnapshot(`${dir}/${name}-${process.pid}.heapsnapshot`)
  setTimeout(() => {
    at('a')()
    setTimeout(at('b'), 3000)
  }, 5000)
}
