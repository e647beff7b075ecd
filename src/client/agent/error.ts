// The errors after which the agent must not retry. `code` is stable (tests and programs branch on it);
// `message` says what to do about it.

export type AgentErrorCode = 'discovery-failed' | 'auth-rejected' | 'blocked' | 'restricted' | 'incompatible'

export class AgentError extends Error {
  constructor(
    readonly code: AgentErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'AgentError'
  }
}
