// The host messages under their public name: what `relay.community(id)` accepts (community/messages.ts).
import type { CommunityHostMsg } from '../actors/community/messages.js'

export type HostMsg = CommunityHostMsg
