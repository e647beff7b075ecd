// What an assignment holds, and how it is let go: the connection's count of jobs, the revocation that tells an
// agent still connected that a job is no longer its own, and a store answer that never came back.
import { type JobErrorCode, revocationTemplate } from '../../protocols/jobs.js'
import type { DispatcherDeps, DispatcherState, JobEntry } from './dispatcher-state.js'

/** Tells `holder` its assignment of `entry` is over (best effort: a connection gone needs no telling). */
export function revoke(entry: JobEntry, holder: { conn: string; pubkey: string }, code: JobErrorCode, deps: DispatcherDeps): void {
  const event = deps.sign(
    revocationTemplate({ job: entry.job.id, agent: holder.pubkey, generation: entry.generation, code }),
    Math.floor(deps.wallMs() / 1000),
  )
  deps.deliverTo(holder.conn, event, JSON.stringify(event))
}

/** The job's connection no longer counts it. */
export function release(state: DispatcherState, entry: JobEntry): void {
  const conn = entry.holder?.conn
  entry.holder = undefined
  entry.acceptByMs = undefined
  if (conn === undefined) return
  const left = (state.held.get(conn) ?? 1) - 1
  if (left > 0) state.held.set(conn, left)
  else state.held.delete(conn)
}

/**
 * A store answer the dispatcher never took (down or full for a minute): the job stays as it was here until the
 * dispatcher's next start reads it back from the store, which decided it.
 */
export function lostAnswer(deps: DispatcherDeps, job: string, what: string): void {
  deps.log.error({ community: deps.community, capability: deps.capability, job, what }, 'a job dispatcher did not take a store answer')
}
