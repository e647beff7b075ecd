// The messages between the bench and a relay child (bench/lib/relay-process.ts ↔ bench/lib/relay-child.ts).

export interface MemorySample {
  rss: number
  heapUsed: number
  external: number
  arrayBuffers: number
}

export type RelayRequest =
  | { id: number; cmd: 'mem' }
  | { id: number; cmd: 'cpu' }
  | { id: number; cmd: 'span-start' }
  | { id: number; cmd: 'span-stop' }
  | { id: number; cmd: 'close' }
  | { id: number; cmd: 'prefill'; file: string; count: number }

export type RelayReply =
  | { type: 'ready'; url: string }
  | { type: 'failed'; error: string }
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: string }
