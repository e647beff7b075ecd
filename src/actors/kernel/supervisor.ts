// The supervision tree (docs/architecture.md §4.5): `root` at the top, `node` under it for the node's own
// parts, and one supervisor per actor kind under one of those two. Restarts and respawns stay with each
// actor's cell (crash-policy.ts, cell.ts); a supervisor counts its children's failures within its intensity
// and escalates past it, as an OTP supervisor does, except that nothing is torn down: root reports what
// reaches it and keeps running, since exiting would take down every community with the failing part.

import { FailureWindow } from './policy.js'
import type { Clock, Intensity, SupervisionEvent, SupervisorPath } from './types.js'

/** A failure reaching a supervisor from below: an actor that gave up, or a supervisor that escalated. */
export interface ChildFailure {
  /** the actor's path or the supervisor's */
  from: string
  describe: string
}

export class Supervisor {
  private readonly failures = new FailureWindow()

  constructor(
    readonly path: SupervisorPath,
    private readonly parent: Supervisor | undefined,
    readonly intensity: Intensity,
    private readonly clock: Clock,
    private readonly emit: (event: SupervisionEvent) => void,
  ) {
    const { maxGiveUps, windowMs } = intensity
    if (!Number.isInteger(maxGiveUps) || maxGiveUps < 0 || !(windowMs >= 0)) {
      throw new RangeError(`invalid intensity for ${path}: ${JSON.stringify(intensity)}`)
    }
  }

  /** a path below this one: 'root' + 'node' → 'root/node' */
  childPath(name: string): SupervisorPath {
    return `${this.path}/${name}`
  }

  /**
   * Counts one failure of a child. Past the intensity this supervisor escalates, and keeps escalating on
   * every further failure while the window still holds more than maxGiveUps: a part that keeps failing
   * stays visible. Root has no window: it reports every escalation that reaches it.
   */
  childFailed(failure: ChildFailure): void {
    if (this.parent === undefined) {
      this.emit({ type: 'degraded', supervisor: failure.from, reason: `${failure.from} escalated: ${failure.describe}` })
      return
    }
    const { maxGiveUps, windowMs } = this.intensity
    const failures = this.failures.record(this.clock.now(), windowMs, maxGiveUps + 1)
    if (failures <= maxGiveUps) return
    this.emit({ type: 'escalated', supervisor: this.path, failures, windowMs })
    this.parent.childFailed({ from: this.path, describe: `${failures} failures of its children within ${windowMs}ms` })
  }
}
