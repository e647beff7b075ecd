// The failures of the Relay methods themselves, each with a stable `code` a host can branch on (like the
// kernel's APIARY_* codes, which ask's failures carry, and ws's WS_ERR_*). The message is for people.

/**
 * - APIARY_RELAY_NOT_LISTENING: the method needs a running node: call listen() first
 * - APIARY_RELAY_CLOSED: close() was called; a relay does not start again
 * - APIARY_UNKNOWN_COMMUNITY: no community with that id is served on this node
 */
export type RelayErrorCode = 'APIARY_RELAY_NOT_LISTENING' | 'APIARY_RELAY_CLOSED' | 'APIARY_UNKNOWN_COMMUNITY'

export class RelayError extends Error {
  constructor(
    readonly code: RelayErrorCode,
    message: string,
  ) {
    super(message)
    this.name = 'RelayError'
  }
}
