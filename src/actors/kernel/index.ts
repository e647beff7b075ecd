export { systemClock } from './clock.js'
export {
  ActorDownError,
  ActorExistsError,
  ActorStoppedError,
  AskTimeoutError,
  HandlerCrashedError,
  InvalidMessageError,
  KernelError,
  KernelShutdownError,
  MailboxFullError,
} from './errors.js'
export { createKernel } from './kernel.js'
export { createLagBridge, type Lag, type LagBridge, type LagBridgeOptions } from './lag-bridge.js'
export { createLagReporter, type LagReporter, type LagReporterOptions } from './lag-reporter.js'
export { ask, pipeTo, type Settled, tell, tellUntilTaken } from './messaging.js'
export { DEFAULT_MAILBOX_CAPACITY, defaultPolicy } from './policy.js'
export type {
  ActorContext,
  ActorDef,
  ActorPath,
  ActorPhase,
  Clock,
  Intensity,
  Kernel,
  KernelOptions,
  StopReason,
  SupervisionEvent,
  SupervisionPolicy,
  SupervisionReport,
  SupervisorLevel,
  SupervisorPath,
  TypedRef,
} from './types.js'
