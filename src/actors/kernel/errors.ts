import type { ActorPath } from './types.js'

/** Kernel failures carry a stable `code` (STYLE: named error classes), like ws's WS_ERR_* codes. */
export abstract class KernelError extends Error {
  abstract readonly code: string
}

export class AskTimeoutError extends KernelError {
  readonly code = 'APIARY_ASK_TIMEOUT'
  constructor(
    readonly path: ActorPath,
    readonly timeoutMs: number,
  ) {
    super(`no reply from ${path} within ${timeoutMs}ms`)
    this.name = 'AskTimeoutError'
  }
}

export class ActorStoppedError extends KernelError {
  readonly code = 'APIARY_ACTOR_STOPPED'
  constructor(readonly path: ActorPath) {
    super(`actor ${path} is stopped or never existed`)
    this.name = 'ActorStoppedError'
  }
}

/** The actor gave up and is waiting for its respawn: nothing is queued for it meanwhile. */
export class ActorDownError extends KernelError {
  readonly code = 'APIARY_ACTOR_DOWN'
  constructor(readonly path: ActorPath) {
    super(`actor ${path} is down, waiting to be respawned`)
    this.name = 'ActorDownError'
  }
}

/** The handler of the message that carried this ask's reply threw: no reply will ever come. */
export class HandlerCrashedError extends KernelError {
  readonly code = 'APIARY_HANDLER_CRASHED'
  constructor(
    readonly path: ActorPath,
    readonly msgType: string,
    cause: unknown,
  ) {
    super(`the handler of ${msgType} in ${path} crashed`, { cause })
    this.name = 'HandlerCrashedError'
  }
}

export class MailboxFullError extends KernelError {
  readonly code = 'APIARY_MAILBOX_FULL'
  constructor(readonly path: ActorPath) {
    super(`mailbox of ${path} is full`)
    this.name = 'MailboxFullError'
  }
}

export class InvalidMessageError extends KernelError {
  readonly code = 'APIARY_INVALID_MESSAGE'
  constructor(readonly path: ActorPath) {
    super(`message for ${path} is not an object with a string type`)
    this.name = 'InvalidMessageError'
  }
}

export class ActorExistsError extends KernelError {
  readonly code = 'APIARY_ACTOR_EXISTS'
  constructor(readonly path: ActorPath) {
    super(`an actor already lives at ${path}`)
    this.name = 'ActorExistsError'
  }
}

export class KernelShutdownError extends KernelError {
  readonly code = 'APIARY_KERNEL_SHUTDOWN'
  constructor() {
    super('the actor kernel is shutting down')
    this.name = 'KernelShutdownError'
  }
}

/** for degraded reasons: never throws, even for an error whose toString throws */
export function describeError(error: unknown): string {
  try {
    return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  } catch {
    return 'an unprintable error'
  }
}
