export { systemClock } from './clock'
export {
  ActorExistsError,
  ActorStoppedError,
  AskTimeoutError,
  InvalidMessageError,
  KernelError,
  KernelShutdownError,
  MailboxFullError,
} from './errors'
export { createKernel } from './kernel'
export { ask, tell } from './messaging'
export { backoffDelayMs, DEFAULT_MAILBOX_CAPACITY, defaultPolicy } from './policy'
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
} from './types'
