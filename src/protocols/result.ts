import type { Reason } from './reasons.js'

/** What a client can cause is a value, never an exception (STYLE: errors). */
export type Result<T, E = Reason> = { ok: true; value: T } | { ok: false; error: E }

export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value })
export const err = <E = Reason>(error: E): Result<never, E> => ({ ok: false, error })
export const OK_VOID: Result<void, never> = { ok: true, value: undefined }

export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`)
}
