// Preloaded into a relay process (NODE_OPTIONS=--require) by fault tests: each SIGUSR2 steps this process's
// wall clock one hour forward, as an NTP correction or a VM resumed from a snapshot would. Only Date moves;
// performance.now and timers keep real time, as they do across a real step.
'use strict'
const RealDate = Date
const STEP_MS = 3_600_000
let offsetMs = 0
process.on('SIGUSR2', () => {
  offsetMs += STEP_MS
})
class SteppedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offsetMs)
    else super(...args)
  }
  static now() {
    return RealDate.now() + offsetMs
  }
}
globalThis.Date = SteppedDate
