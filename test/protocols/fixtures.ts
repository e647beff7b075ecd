import type { Limits } from '../../src/protocols/limits'
import type { NostrEvent } from '../../src/protocols/nip01/event'

/** Small limits so each one can be hit at the limit and at limit + 1. */
export const LIMITS: Limits = {
  maxMessageBytes: 4096,
  maxEventBytes: 1024,
  maxSubscriptions: 5,
  maxFilters: 3,
  maxReqValues: 12,
  maxLimit: 100,
  defaultLimit: 20,
  maxSubidLength: 8,
  maxEventTags: 4,
  maxTagValueBytes: 16,
  maxContentBytes: 64,
  createdAtPastSeconds: 1000,
  createdAtFutureSeconds: 60,
}

export const NOW = 1_700_000_000

export const ID = 'a'.repeat(64)
export const PUBKEY = 'b'.repeat(64)
export const SIG = 'c'.repeat(128)
export const OTHER_PUBKEY = 'd'.repeat(64)

/** Well-shaped but unsigned: for parser tests, which never check signatures. */
export const shapeEvent = (over: Partial<NostrEvent> = {}): NostrEvent => ({
  id: ID,
  pubkey: PUBKEY,
  created_at: NOW,
  kind: 1,
  tags: [],
  content: 'hi',
  sig: SIG,
  ...over,
})
