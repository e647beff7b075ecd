// What one host must give the agents scenario's fleet: a loopback source address per load process, and an
// open-files limit that lets the relay hold a socket per agent. Checked before anything starts, as a fleet
// that runs out of either fails minutes into a run with an error that names neither.
import { openFilesLimit } from '../proc-readings'

/**
 * The local IP load process k's agents connect from (the probe is k = shards): Linux routes all of 127/8 to lo.
 * One source address has about 28,000 ephemeral ports toward the relay's port, and the relay's per-IP state
 * would hold the whole fleet under one key.
 */
export const sourceAddress = (k: number) => `127.0.0.${2 + k}`

/** 127.0.0.2 to 127.0.0.254: the load processes and the probe */
const MAX_SHARDS = 252

/**
 * What the relay holds beside the agents' and the probe's sockets: its database files, worker threads, the
 * bench's own connections and NIP-11 requests in flight while the fleet reconnects.
 */
export const FD_HEADROOM = 2_048

/** the open files the relay needs for `agents` and `probeHandshakes` sockets */
export const openFilesNeeded = (o: { agents: number; probeHandshakes: number }) => o.agents + o.probeHandshakes + FD_HEADROOM

/** Throws when this host's limits cannot hold the fleet (the relay and the load processes inherit ours). */
export function checkFleetFitsHost(o: { agents: number; shards: number; probeHandshakes: number }): void {
  if (o.shards > MAX_SHARDS) throw new Error(`at most ${MAX_SHARDS} load processes: each connects from a loopback address of its own`)
  const limit = openFilesLimit()
  const needed = openFilesNeeded(o)
  if (limit < needed)
    throw new Error(
      `open-files limit ${limit} is below the ${needed} the relay needs for ${o.agents} agents and ${o.probeHandshakes} probe handshakes (a socket each, and ${FD_HEADROOM} beside): raise it (ulimit -n; past the hard limit needs root) and run again`,
    )
}
