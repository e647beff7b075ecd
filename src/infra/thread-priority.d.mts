/** Adds `nice` to this worker thread's nice value (Linux only); returns why it could not, or undefined. */
export function lowerThreadPriority(nice: number | undefined): string | undefined

/** Names the calling thread for the OS (Linux, 15 bytes at most); best effort. */
export function nameThisThread(name: string): void
