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

const require = createRequire(import.meta.url)

export const nact = require('nact') as NactApi

/** The one field of nact's Actor instance we touch (see forgetFiredImmediate). */
export interface NactActor {
  immediate: unknown
}

const systemMap = require('nact/lib/system-map') as { find(systemName: string, ref: NactRef): NactActor | undefined }

/** nact's Actor behind `ref` (a path walk: resolve once per spawn), or undefined once it is gone. */
export function nactActorOf(ref: NactRef): NactActor | undefined {
  const name = (ref as NactRef & { system?: { name?: string } }).system?.name
  return name === undefined ? undefined : systemMap.find(name, ref)
}

/**
 * nact 7.6.2 keeps the handle of an actor's last setImmediate (actor.js handleMessage) after it has fired,
 * until the actor's next message; and Node leaves a fired Immediate linked to those queued after it in the
 * same turn (`_idleNext`). So one actor that hears a message per heartbeat kept a whole turn's immediates,
 * their callbacks and what those hold, alive for 15 s: past the young generation, which copied and promoted
 * them (found with two heap snapshots under the agents benchmark; the scavenges that copied them were the
 * relay's longest pauses). Called from inside the
 * handler, where the immediate has fired; nact's stop clears only one that has not, which this never touches.
 */
export function forgetFiredImmediate(actor: NactActor | undefined): void {
  if (actor !== undefined) actor.immediate = undefined
}

// nact's ActorPath.isValidName accepts only /^[a-z0-9-$_.+!*'(),]+$/i. '$' is left out here on purpose:
// it is our escape character, which keeps the encoding injective (distinct paths → distinct names).
const UNSAFE = /[^a-zA-Z0-9\-_.+!*'(),]/g

/** every unsafe UTF-16 code unit becomes '$' + 4 hex digits: 'ab:cd' → 'ab$003acd' */
export function toNactName(id: string): string {
  return id.replace(UNSAFE, (c) => '$' + c.charCodeAt(0).toString(16).padStart(4, '0'))
}
