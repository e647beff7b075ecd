import type { NostrEvent } from '../../protocols/nip01/event'

/** Checks an event's id (sha256 of the NIP-01 serialization) and its BIP-340 Schnorr signature. */
export interface Verifier {
  /** 'ok' | 'bad-id' | 'bad-sig'; never throws on untrusted input. */
  verify(event: NostrEvent): Promise<VerifyVerdict>
  /** number of worker threads doing the work (1 for in-thread verifiers) */
  readonly threads: number
  close(): Promise<void>
}

export type VerifyVerdict = 'ok' | 'bad-id' | 'bad-sig'
