// The requesters of a dispatched-jobs fault run (test/faults/jobs.test.ts, cluster-jobs.test.ts) and what is read
// back for the checker (test/support/job-checker.ts): each requester's calls and every answer its connection
// received, and what the relay stored.
import { bytesToHex } from '@noble/hashes/utils.js'
import { expect } from 'vitest'
import { AgentClient, type JobCall, JobError } from '../../src/client/index'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { makeKeys } from './events'
import { type JobRecord, type JobRunRecord, KIND_CHUNK, KIND_FEEDBACK, KIND_REQUEST, KIND_RESULT } from './job-checker'
import { auth, reqEvents } from './relay-client'
import { connect } from './ws-client'

const UNTHROTTLED = { ratePerSecond: 10_000, burst: 10_000 }

/** a requester: an AgentClient whose connection also records every answer event addressed to it, in arrival order */
export async function startRequester(url: string, arrivals: Map<string, NostrEvent[]>): Promise<AgentClient> {
  const client = new AgentClient({
    relays: [url],
    secretKey: bytesToHex(makeKeys().secretKey),
    capabilities: [],
    heartbeatSeconds: 1,
    leaseSeconds: 3,
    sessionSeconds: 300,
    throttle: { global: UNTHROTTLED, perChannel: UNTHROTTLED, perRecipient: UNTHROTTLED },
  })
  await client.start()
  const seen: NostrEvent[] = []
  arrivals.set(client.pubkey, seen)
  client.subscribe([{ kinds: [KIND_RESULT, KIND_FEEDBACK, KIND_CHUNK], '#p': [client.pubkey] }], (e) => seen.push(e))
  return client
}

export function track(call: JobCall, job: JobRecord): Promise<void> {
  void (async () => {
    for await (const chunk of call.chunks) job.chunks.push(chunk)
  })()
  return call.then(
    (r) => {
      job.outcome = { result: r.event }
    },
    (e: unknown) => {
      const error = e instanceof JobError ? { code: e.code, message: e.message, event: e.event } : { code: 'thrown', message: String(e) }
      job.outcome = { error }
    },
  )
}

export async function readStored(relay: { url: string }, jobs: JobRecord[], requesters: string[]): Promise<JobRunRecord['stored']> {
  const c = await connect(relay.url)
  expect((await auth(c, makeKeys(), relay.url)).accepted).toBe(true)
  const ids = jobs.map((j) => j.id)
  const [requests, results, feedback] = [
    await reqEvents(c, [{ kinds: [KIND_REQUEST], authors: requesters, limit: 5000 }]),
    await reqEvents(c, [{ kinds: [KIND_RESULT], '#e': ids, limit: 5000 }]),
    await reqEvents(c, [{ kinds: [KIND_FEEDBACK], '#e': ids, limit: 5000 }]),
  ]
  c.close()
  return { requests, results, feedback }
}
