// A NIP-01 filter in the form the agent client sends it: its own module because the subscriptions, the
// backlog pager and watch() all speak it, and none of them should import another for a type.

/** A NIP-01 filter in its wire form (`#h`, `#p` ... as sent). */
export type WireFilter = Record<string, unknown> & { since?: number; limit?: number }
