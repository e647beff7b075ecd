import { describe, expect, it } from 'vitest'
import { buildRelayInfo, type RelayInfoParams } from '../../src/protocols/nip11'
import { LIMITS, PUBKEY } from './fixtures'

const params: RelayInfoParams = {
  name: 'Bees',
  description: 'a hive',
  pubkey: PUBKEY,
  contact: 'mailto:keeper@example.com',
  supportedNips: [42, 1, 11, 1],
  software: 'apiary',
  version: '0.1.0',
  limits: LIMITS,
  authRequired: false,
  restrictedWrites: true,
  paymentRequired: false,
}

describe('the NIP-11 relay information document', () => {
  it('advertises exactly the enforced limits', () => {
    expect(buildRelayInfo(params).limitation).toEqual({
      max_message_length: LIMITS.maxMessageBytes,
      max_subscriptions: LIMITS.maxSubscriptions,
      max_filters: LIMITS.maxFilters,
      max_req_values: LIMITS.maxReqValues,
      max_limit: LIMITS.maxLimit,
      default_limit: LIMITS.defaultLimit,
      max_subid_length: LIMITS.maxSubidLength,
      max_event_tags: LIMITS.maxEventTags,
      max_content_length: LIMITS.maxContentBytes,
      created_at_lower_limit: LIMITS.createdAtPastSeconds,
      created_at_upper_limit: LIMITS.createdAtFutureSeconds,
      auth_required: false,
      restricted_writes: true,
      payment_required: false,
    })
  })

  it('lists supported NIPs once each, ascending', () => {
    expect(buildRelayInfo(params).supported_nips).toEqual([1, 11, 42])
  })

  it('carries the identity fields', () => {
    const info = buildRelayInfo(params)
    expect(info).toMatchObject({ name: 'Bees', description: 'a hive', pubkey: PUBKEY, software: 'apiary', version: '0.1.0' })
  })

  it('omits pubkey, self and contact when not configured', () => {
    const info = buildRelayInfo({ ...params, pubkey: undefined, self: undefined, contact: undefined })
    expect(Object.keys(info)).not.toContain('pubkey')
    expect(Object.keys(info)).not.toContain('self')
    expect(Object.keys(info)).not.toContain('contact')
  })

  it('states the relay key as self, apart from the admin contact pubkey', () => {
    const info = buildRelayInfo({ ...params, self: 'cd'.repeat(32) })
    expect(info).toMatchObject({ pubkey: PUBKEY, self: 'cd'.repeat(32) })
  })
})
