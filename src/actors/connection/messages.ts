import type { OwnerAttestation } from '../../protocols/nip-oa.js'
import type { NostrEvent } from '../../protocols/nip01/event.js'
import type { Result } from '../../protocols/result.js'

export type ConnectionMsg =
  | { type: 'Frame'; text: string }
  | { type: 'AuthChecked'; event: NostrEvent; result: Result<OwnerAttestation | undefined> }
