export { systemClock } from './clock.js'
export {
  ActorExistsError,
  ActorStoppedError,
  AskTimeoutError,
  InvalidMessageError,
  KernelError,
  KernelShutdownError,
  MailboxFullError,
} from './errors.js'
export { createKernel } from './kernel.js'
export { ask, tell } from './messaging.js'
export { backoffDelayMs, DEFAULT_MAILBOX_CAPACITY, defaultPolicy } from './policy.js'
export type {
  ActorContext,
  ActorDef,
  ActorPath,
  Clock,
  Kernel,
  KernelOptions,
  StopReason,
  SupervisionEvent,
  SupervisionPolicy,
  TypedRef,
} from './types.js'
