// The agent's lifecycle states and what state$ emits (docs/agent-client.md, State machine): their own module
// because the client, which owns the state, and the connection attempt, which reports what moves it, both
// speak them.
import type { AgentError } from './error.js'

export type AgentState = 'INIT' | 'DISCOVERED' | 'AUTHENTICATED' | 'ACTIVE' | 'SUSPECT' | 'ZOMBIE' | 'CLOSED'

export interface AgentStateChange {
  state: AgentState
  cause?: string
  /** on CLOSED after a terminal error */
  error?: AgentError
}

/** the states of a registered connection: subscriptions are sent on it and discover() can query it */
export const LIVE: ReadonlySet<AgentState> = new Set(['ACTIVE', 'SUSPECT', 'ZOMBIE'])
