import type { ChannelInit } from '../../src/infra/store/channel-store'

/** A channel row as a 9007 without tags makes it (every flag off, every kind), named by its id unless `over` says. */
export function channelRow(id: string, over: Partial<ChannelInit> = {}): ChannelInit {
  return {
    id,
    name: id,
    about: '',
    picture: '',
    banner: '',
    private: false,
    restricted: false,
    closed: false,
    hidden: false,
    supportedKinds: null,
    createdAt: 1,
    ...over,
  }
}
