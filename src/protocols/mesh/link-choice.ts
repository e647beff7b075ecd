// One link per pair of nodes. Two nodes that dial each other at the same moment end up with two
// links; both must drop the same one without talking about it. Rule: keep the link dialed by the smaller
// runtime id. Runtime ids are 64 lowercase hex digits, so string order is numeric order, and the rule gives
// the same answer whichever side evaluates it.

/** Should the link that `dialer` opened to `dialed` survive, when the two may also have a link the other way? */
export function isPreferredLink(dialer: string, dialed: string): boolean {
  if (dialer === dialed) throw new RangeError('a node does not link to itself')
  return dialer < dialed
}
