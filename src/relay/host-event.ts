// An event a host program signed with a key of its own, checked as a client's EVENT is before it reaches a
// community (shape, limits, created_at window, id and signature), so `relay.publishSigned` can only store
// what any client could verify. The raw form is the relay's own serialization, never one the host passes.
import type { Verifier } from '../infra/verify/verifier.js'
import type { Limits } from '../protocols/limits.js'
import { asVerified, parseEventWithRaw, type VerifiedEvent } from '../protocols/nip01/event.js'
import { reason } from '../protocols/reasons.js'
import { err, ok, type Result } from '../protocols/result.js'

export interface HostEvent {
  event: VerifiedEvent
  raw: string
}

export async function checkHostEvent(input: unknown, limits: Limits, verifier: Verifier, nowSeconds: number): Promise<Result<HostEvent>> {
  const parsed = parseEventWithRaw(input, limits, nowSeconds)
  if (!parsed.ok) return parsed
  const verdict = await verifier.verify(parsed.value.event)
  if (verdict !== 'ok') return err(reason('invalid', verdict === 'bad-id' ? 'event id does not match its content' : 'bad signature'))
  return ok({ event: asVerified(parsed.value.event), raw: parsed.value.raw })
}
