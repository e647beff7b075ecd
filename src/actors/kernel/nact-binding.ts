import { createRequire } from 'node:module'

/**
 * The only door to nact. nact 7.6.2 ships no types; this declares exactly the part we use, so a reader
 * sees the whole surface we depend on. Every other file in the code base talks to the kernel instead.
 */
export interface NactRef {
  readonly type: string
}

/** nact spreads its SupervisionActions symbols into the onCrash context; we only ever answer these three. */
export interface NactSupervisionCtx {
  readonly stop: symbol
  readonly reset: symbol
  readonly resume: symbol
}

export type NactOnCrash = (msg: unknown, error: unknown, ctx: NactSupervisionCtx) => symbol | Promise<symbol>

interface NactApi {
  start(opts: { name: string }): NactRef
  spawn(
    parent: NactRef,
    f: (state: unknown, msg: unknown) => unknown,
    name: string,
    props: { initialStateFunc: () => unknown; onCrash: NactOnCrash },
  ): NactRef
  dispatch(ref: NactRef, msg: unknown): void
  stop(ref: NactRef): void
}

export const nact = createRequire(import.meta.url)('nact') as NactApi

// nact's ActorPath.isValidName accepts only /^[a-z0-9-$_.+!*'(),]+$/i. '$' is left out here on purpose:
// it is our escape character, which keeps the encoding injective (distinct paths → distinct names).
const UNSAFE = /[^a-zA-Z0-9\-_.+!*'(),]/g

/** every unsafe UTF-16 code unit becomes '$' + 4 hex digits: 'ab:cd' → 'ab$003acd' */
export function toNactName(id: string): string {
  return id.replace(UNSAFE, (c) => '$' + c.charCodeAt(0).toString(16).padStart(4, '0'))
}
