// The relay's side of dispatched jobs, played by the scripted relay: a community key that signs assignments,
// revocations and terminal errors (advertised as NIP-11 `self`), a requester and a worker key, and readers of
// the frames the agent sent.
import type { AgentClient } from '../../../src/client/index'
import { assignmentTemplate, type JobErrorCode, revocationTemplate, terminalErrorTemplate } from '../../../src/protocols/jobs'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { type EventTemplate, type SigningKey, signTemplate, toSigningKey } from '../../../src/protocols/nip01/sign'
import { makeKeys } from '../../support/events'
import { eventually } from '../../support/eventually'
import type { ScriptedRelay } from './scripted-relay'

export const communityKey = toSigningKey(makeKeys().secretKey)
export const requesterKey = toSigningKey(makeKeys().secretKey)
export const workerKey = toSigningKey(makeKeys().secretKey)
export const strangerKey = toSigningKey(makeKeys().secretKey)

let tick = 0
/** distinct created_at per event, so two events alike but for their time are two ids */
export const sign = (key: SigningKey, t: EventTemplate): NostrEvent => signTemplate(key, t, Math.floor(Date.now() / 1000) + ++tick)

export const jobRequest = (input: string, capability = 'echo', kind = 5050): NostrEvent =>
  sign(requesterKey, {
    kind,
    tags: [['c', capability], ['dispatch'], ['i', input, 'text']],
    content: '',
  })

export const assignment = (request: NostrEvent, agent: string, generation: number, key = communityKey): NostrEvent =>
  sign(
    key,
    assignmentTemplate({
      job: request.id,
      agent,
      capability: request.tags.find((t) => t[0] === 'c')![1]!,
      generation,
      acceptMs: 5000,
      requestRaw: JSON.stringify(request),
    }),
  )

export const revocation = (request: NostrEvent, agent: string, generation: number, code: JobErrorCode): NostrEvent =>
  sign(communityKey, revocationTemplate({ job: request.id, agent, generation, code }))

export const terminalError = (job: string, requester: string, code: JobErrorCode): NostrEvent =>
  sign(communityKey, terminalErrorTemplate({ job, requester, generation: 1, code, text: `the job ended: ${code}` }))

export const tagOf = (e: NostrEvent, name: string): string[] | undefined => e.tags.find((t) => t[0] === name)

/** every event the agent sent, in order, over all its connections */
export const sentEvents = (r: ScriptedRelay): NostrEvent[] =>
  r.connections.flatMap((c) => c.frames.filter((f) => f[0] === 'EVENT').map((f) => f[1] as NostrEvent))

/** what the agent sent about `job`: feedback with status `status`, or events of `kind` */
export const feedbackOn = (r: ScriptedRelay, job: string, status: string): NostrEvent | undefined =>
  sentEvents(r).find((e) => e.kind === 7000 && tagOf(e, 'e')?.[1] === job && tagOf(e, 'status')?.[1] === status)
export const sentAbout = (r: ScriptedRelay, job: string, kind: number): NostrEvent[] =>
  sentEvents(r).filter((e) => e.kind === kind && tagOf(e, 'e')?.[1] === job)

export const awaitSent = <T>(probe: () => T | undefined, what: string): Promise<T> =>
  eventually(probe, (v) => v !== undefined, what, { timeoutMs: 3000 }) as Promise<T>

/** the REQ the agent sent whose first filter matches `holds` */
export const reqFrame = (r: ScriptedRelay, holds: (filter: Record<string, unknown>) => boolean): unknown[] | undefined =>
  r.connections.flatMap((c) => c.frames).find((f) => f[0] === 'REQ' && holds(f[2] as Record<string, unknown>))

/** sends `event` to the agent on its latest connection, as an event of its assignments subscription */
export async function assignmentFeed(r: ScriptedRelay, agent: AgentClient): Promise<(event: NostrEvent) => void> {
  const req = await awaitSent(
    () => reqFrame(r, (f) => JSON.stringify(f) === JSON.stringify({ kinds: [25900], '#p': [agent.pubkey] })),
    'the REQ for assignments',
  )
  return (event) => r.connections.at(-1)!.ws.send(JSON.stringify(['EVENT', req[1], event]))
}
