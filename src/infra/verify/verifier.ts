import type { NostrEvent } from '../../protocols/nip01/event.js'

/** Checks an event's id (sha256 of the NIP-01 serialization) and its BIP-340 Schnorr signature. */
export interface Verifier {
  /** 'ok' | 'bad-id' | 'bad-sig'; never throws on untrusted input. */
  verify(event: NostrEvent): Promise<VerifyVerdict>
  /** number of worker threads doing the work (1 for in-thread verifiers) */
  readonly threads: number
  close(): Promise<void>
}

export type VerifyVerdict = 'ok' | 'bad-id' | 'bad-sig'

/**
 * The verifier itself failed (an outage, never a client's fault): callers answer `error:` and log the cause.
 * - APIARY_VERIFIER_WORKER_DIED: the request was in flight on two workers that both died
 * - APIARY_VERIFIER_UNAVAILABLE: workers cannot be started (the pool gave up restarting them)
 * - APIARY_VERIFIER_CLOSED: close() was called before the verdict arrived
 */
export type VerifierErrorCode = 'APIARY_VERIFIER_WORKER_DIED' | 'APIARY_VERIFIER_UNAVAILABLE' | 'APIARY_VERIFIER_CLOSED'

export class VerifierError extends Error {
  constructor(
    readonly code: VerifierErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'VerifierError'
  }
}
