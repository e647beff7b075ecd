import { isHex64 } from './ids.js'
import { MAX_KIND } from './nip01/kinds.js'
import type { EventTemplate } from './nip01/sign.js'
import { reason } from './reasons.js'
import { err, ok, type Result } from './result.js'

/*
 * NIP-29 pinned events: a channel admin's 9010 carries the whole list, the relay mirrors it in its 39005.
 * Pure: the community authorizes the 9010 and stores what pinsTemplate builds.
 */

export const KIND_UPDATE_PINS = 9010
export const KIND_GROUP_PINS = 39_005

/**
 * Pins in one list (NIP-29: "the relay may choose to limit the number of pins"). Clients show them at the top
 * of the channel; 50 is more than a screen of them, and keeps the 39005 every member fetches small.
 */
export const MAX_PINS = 50

// NIP-01 `a` tag: `<kind>:<pubkey>:<d>`; the d part may itself hold colons
const ADDRESS = /^(\d{1,5}):([0-9a-f]{64}):/

/** A pin: an `e` tag (an event id) or an `a` tag (an address), in display order. */
export type Pin = ['e' | 'a', string]

/**
 * The pin list of a 9010: its `e` and `a` tags in order; other tags are not pins. A pin listed twice keeps its
 * first place. An empty list clears the pins.
 */
export function parsePins(tags: readonly string[][]): Result<Pin[]> {
  const pins: Pin[] = []
  const seen = new Set<string>()
  for (const t of tags) {
    const [name, value] = t
    if (name !== 'e' && name !== 'a') continue
    if (name === 'e' && !isHex64(value)) return err(reason('invalid', 'an e pin must be an event id (64 lowercase hex)'))
    if (name === 'a' && !isAddress(value)) return err(reason('invalid', 'an a pin must be an address <kind>:<pubkey>:<d>'))
    const key = `${name}${value}`
    if (seen.has(key)) continue
    seen.add(key)
    if (pins.length === MAX_PINS) return err(reason('invalid', `at most ${MAX_PINS} pinned events`))
    pins.push([name, value as string])
  }
  return ok(pins)
}

function isAddress(v: unknown): boolean {
  if (typeof v !== 'string') return false
  const m = ADDRESS.exec(v)
  return m !== null && Number(m[1]) <= MAX_KIND
}

/** kind 39005: the channel's pins, in the order the latest 9010 gave them. */
export function pinsTemplate(channel: string, pins: readonly Pin[]): EventTemplate {
  return { kind: KIND_GROUP_PINS, tags: [['d', channel], ...pins.map((p) => [...p])], content: '' }
}
