// What supervision$ tells the operator: a metric per event, and a log line per state change, each naming the
// supervisor it happened under (root/community, root/node/mesh-peer: a fixed set, so a fine metric label). A
// part that keeps failing the same way (the Redis subscriber bridge during an outage: one crash per reconnect
// attempt) logs its first crash and then only when the error changes; the repeats are counted in the next line.
import type { Observable } from 'rxjs'
import type { SupervisionEvent } from '../actors/kernel/index.js'
import type { Logger } from '../infra/log.js'
import type { Metrics } from '../infra/metrics.js'

const messageOf = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error))

export function logSupervision(events$: Observable<SupervisionEvent>, metrics: Metrics, log: Logger): void {
  const lastCrash = new Map<string, { message: string; repeats: number }>()
  events$.subscribe((e) => {
    metrics.supervision.inc({ type: e.type, kind: 'kind' in e ? e.kind : 'root', supervisor: e.supervisor })
    switch (e.type) {
      case 'crashed': {
        const message = messageOf(e.error)
        const last = lastCrash.get(e.path)
        const where = { path: e.path, supervisor: e.supervisor, msgType: e.msgType }
        if (last?.message === message) {
          last.repeats++
          log.debug({ ...where, repeats: last.repeats }, 'actor crashed again, same error')
          return
        }
        lastCrash.set(e.path, { message, repeats: 0 })
        log.error({ err: e.error, ...where, previousRepeats: last?.repeats }, 'actor crashed')
        return
      }
      case 'stopped':
        lastCrash.delete(e.path)
        return
      case 'gave-up':
      case 'escalated':
      case 'degraded':
        log.error({ event: e }, 'supervision')
        return
      default:
        return
    }
  })
}
