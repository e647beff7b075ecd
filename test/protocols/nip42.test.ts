import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { type AuthExpectation, checkAuthEvent, normalizeRelayUrl } from '../../src/protocols/nip42'
import { prefixOf } from '../../src/protocols/reasons'
import { NOW, shapeEvent } from './fixtures'

const expectation: AuthExpectation = {
  challenge: 'c-123',
  relayUrl: 'wss://bees.example.com',
  nowSeconds: NOW,
  windowSeconds: 600,
}

const authEvent = (over: Partial<NostrEvent> = {}): NostrEvent =>
  shapeEvent({
    kind: 22_242,
    content: '',
    tags: [
      ['relay', 'wss://bees.example.com/'],
      ['challenge', 'c-123'],
    ],
    ...over,
  })

describe('checking a NIP-42 AUTH event', () => {
  it('accepts the right kind, challenge, relay and time', () => {
    expect(checkAuthEvent(authEvent(), expectation).ok).toBe(true)
  })

  it.each([
    { name: 'exactly windowSeconds old', created_at: NOW - 600 },
    { name: 'exactly windowSeconds ahead', created_at: NOW + 600 },
  ])('accepts an event $name', ({ created_at }) => {
    expect(checkAuthEvent(authEvent({ created_at }), expectation).ok).toBe(true)
  })

  it('accepts a relay tag that differs only in spelling (case, default port, trailing dot and slash)', () => {
    const tags = [
      ['relay', 'WSS://Bees.Example.COM.:443/'],
      ['challenge', 'c-123'],
    ]
    expect(checkAuthEvent(authEvent({ tags }), expectation).ok).toBe(true)
  })

  const refused: { name: string; event: NostrEvent }[] = [
    { name: 'the wrong kind', event: authEvent({ kind: 1 }) },
    { name: 'no challenge tag', event: authEvent({ tags: [['relay', 'wss://bees.example.com']] }) },
    {
      name: 'a different challenge',
      event: authEvent({
        tags: [
          ['relay', 'wss://bees.example.com'],
          ['challenge', 'c-999'],
        ],
      }),
    },
    { name: 'no relay tag', event: authEvent({ tags: [['challenge', 'c-123']] }) },
    {
      name: 'another community host',
      event: authEvent({
        tags: [
          ['relay', 'wss://ants.example.com'],
          ['challenge', 'c-123'],
        ],
      }),
    },
    {
      name: 'another port',
      event: authEvent({
        tags: [
          ['relay', 'wss://bees.example.com:8443'],
          ['challenge', 'c-123'],
        ],
      }),
    },
    {
      name: 'another scheme',
      event: authEvent({
        tags: [
          ['relay', 'ws://bees.example.com'],
          ['challenge', 'c-123'],
        ],
      }),
    },
    {
      name: 'a relay tag that is not a URL',
      event: authEvent({
        tags: [
          ['relay', 'bees'],
          ['challenge', 'c-123'],
        ],
      }),
    },
    { name: 'a stale event (window + 1)', event: authEvent({ created_at: NOW - 601 }) },
    { name: 'a future event (window + 1)', event: authEvent({ created_at: NOW + 601 }) },
  ]

  it.each(refused)('refuses $name with "invalid:"', ({ event }) => {
    const r = checkAuthEvent(event, expectation)
    expect(!r.ok && prefixOf(r.error)).toBe('invalid')
  })
})

describe('normalizing relay URLs for comparison', () => {
  const table: { input: string; out: string | undefined }[] = [
    { input: 'wss://relay.example.com', out: 'wss://relay.example.com' },
    { input: 'WSS://Relay.Example.com/', out: 'wss://relay.example.com' },
    { input: 'wss://relay.example.com:443', out: 'wss://relay.example.com' },
    { input: 'ws://relay.example.com:80/', out: 'ws://relay.example.com' },
    { input: 'ws://relay.example.com:443', out: 'ws://relay.example.com:443' },
    { input: 'wss://relay.example.com:7777/', out: 'wss://relay.example.com:7777' },
    { input: 'wss://relay.example.com./', out: 'wss://relay.example.com' },
    { input: 'wss://relay.example.com/Bees/', out: 'wss://relay.example.com/Bees' },
    { input: 'ws://[::1]:7777', out: 'ws://[::1]:7777' },
    { input: 'https://relay.example.com', out: undefined },
    { input: 'wss://user:pw@relay.example.com', out: undefined },
    { input: 'not a url', out: undefined },
    { input: '', out: undefined },
  ]
  it.each(table)('maps $input to $out', ({ input, out }) => {
    expect(normalizeRelayUrl(input)).toBe(out)
  })
})
