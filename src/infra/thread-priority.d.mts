/** Adds `nice` to this worker thread's nice value (Linux only); returns why it could not, or undefined. */
export function lowerThreadPriority(nice: number | undefined): string | undefined
