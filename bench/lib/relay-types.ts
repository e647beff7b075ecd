// What the bench holds of a relay it started, whichever relay it is and however it runs (a Node child over IPC,
// or strfry's binary read from /proc).
import type { LoopDelay } from './loop-delay'
import type { MemorySample } from './relay-ipc'

export type RelayName = 'apiary' | 'baseline' | 'strfry'

export interface RelayProcess {
  name: RelayName
  url: string
  pid: number
  memory(): Promise<MemorySample>
  /** CPU time the relay process has used so far (all threads), microseconds */
  cpuMicros(): Promise<number>
  /** starts a measured span: event-loop delay, GC pauses, and the profiling the knobs ask for */
  spanStart(): Promise<void>
  spanStop(): Promise<LoopDelay>
  prefill(file: string, count: number): Promise<number>
  close(): Promise<void>
}
