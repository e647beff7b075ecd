import type { OwnerAttestation } from '../../protocols/nip-oa'
import type { NostrEvent } from '../../protocols/nip01/event'
import type { Result } from '../../protocols/result'

export type ConnectionMsg =
  | { type: 'Frame'; text: string }
  | { type: 'AuthChecked'; event: NostrEvent; result: Result<OwnerAttestation | undefined> }
