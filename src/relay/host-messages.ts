// What a host program may send a community actor through `relay.community(id)`: the variants of CommunityMsg
// with a use outside the relay. The others are the actor's own plumbing (its connections' frames, its I/O's
// results, bus traffic), and a ref typed to these keeps a host from forging them.
import type { CommunityMsg } from '../actors/community/messages.js'

export type HostMsg = Extract<CommunityMsg, { type: 'Stats' | 'Publish' | 'DisconnectPubkey' | 'DisconnectCommunity' }>
