import { config, type Observable, Subject } from 'rxjs'
import type { SupervisionEvent } from './types.js'

let hookInstalled = false

/**
 * RxJS reports an error thrown by a subscriber from a setTimeout; without onUnhandledError that rethrow is
 * an uncaught exception and ends the process. If the application already installed a hook (its logger),
 * that one stays: it owns error reporting.
 */
export function installUnhandledErrorHook(): void {
  if (hookInstalled) return
  hookInstalled = true
  if (config.onUnhandledError) return
  config.onUnhandledError = (error) => {
    try {
      console.error('apiary: a supervision$ (or other RxJS) subscriber threw', error)
    } catch {
      // nowhere left to report; never throw from here (this runs in a timer)
    }
  }
}

/** RxJS wraps each subscriber, so one subscriber's throw reaches neither the emitter nor other subscribers. */
export class SupervisionBus {
  private readonly subject = new Subject<SupervisionEvent>()
  readonly events$: Observable<SupervisionEvent> = this.subject.asObservable()

  constructor() {
    installUnhandledErrorHook()
  }

  emit(event: SupervisionEvent): void {
    try {
      this.subject.next(event)
    } catch (error) {
      // only reachable through a hand-made Subscriber subclass that RxJS does not wrap
      config.onUnhandledError?.(error)
    }
  }

  complete(): void {
    this.subject.complete()
  }
}
