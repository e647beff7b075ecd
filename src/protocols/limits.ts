/**
 * The limits the protocol layer enforces. Values come from the config schema (src/infra/config.ts) and are
 * advertised verbatim in NIP-11 `limitation`.
 */
export interface Limits {
  maxMessageBytes: number
  maxEventBytes: number
  maxSubscriptions: number
  maxFilters: number
  /** values in the lists (ids, authors, kinds, #tags) of all the filters of one REQ/COUNT together */
  maxReqValues: number
  maxLimit: number
  defaultLimit: number
  maxSubidLength: number
  maxEventTags: number
  maxTagValueBytes: number
  maxContentBytes: number
  /** an event may be at most this many seconds older than now */
  createdAtPastSeconds: number
  /** an event may be at most this many seconds newer than now */
  createdAtFutureSeconds: number
}
