import { describe, expect, it } from 'vitest'
import type { NostrEvent } from '../../src/protocols/nip01/event'
import { checkNip98, KIND_HTTP_AUTH, type Nip98Expectation, normalizeHttpUrl } from '../../src/protocols/nip98'
import { prefixOf } from '../../src/protocols/reasons'
import { NOW, shapeEvent } from './fixtures'

const BODY_HASH = 'e'.repeat(64)

const expectation: Nip98Expectation = {
  url: 'http://bees.example.com:7777/',
  method: 'POST',
  nowSeconds: NOW,
  windowSeconds: 60,
  bodySha256Hex: BODY_HASH,
}

const authEvent = (over: Partial<NostrEvent> = {}): NostrEvent =>
  shapeEvent({
    kind: KIND_HTTP_AUTH,
    content: '',
    tags: [
      ['u', 'http://bees.example.com:7777/'],
      ['method', 'POST'],
      ['payload', BODY_HASH],
    ],
    ...over,
  })

const header = (value: unknown) => `Nostr ${btoa(JSON.stringify(value))}`
const tagsWith = (...tags: string[][]) => ({ tags })

describe('checking a NIP-98 Authorization header', () => {
  it('returns the event for the right kind, URL, method, payload and time', () => {
    const r = checkNip98(header(authEvent()), expectation)
    expect(r.ok && r.value.kind).toBe(KIND_HTTP_AUTH)
  })

  it.each([
    ['the scheme in lower case', `nostr ${btoa(JSON.stringify(authEvent()))}`],
    ['extra spaces around the token', `  Nostr   ${btoa(JSON.stringify(authEvent()))}  `],
    ['created_at 60 s ago (the window edge)', header(authEvent({ created_at: NOW - 60 }))],
    ['created_at 60 s ahead (the window edge)', header(authEvent({ created_at: NOW + 60 }))],
    [
      'a lower-case method tag',
      header(authEvent(tagsWith(['u', 'http://bees.example.com:7777/'], ['method', 'post'], ['payload', BODY_HASH]))),
    ],
    [
      'the u tag without the trailing slash',
      header(authEvent(tagsWith(['u', 'http://bees.example.com:7777'], ['method', 'POST'], ['payload', BODY_HASH]))),
    ],
    [
      'the u tag with an upper-case scheme and host',
      header(authEvent(tagsWith(['u', 'HTTP://Bees.Example.COM:7777/'], ['method', 'POST'], ['payload', BODY_HASH]))),
    ],
    [
      'an upper-case payload hash',
      header(authEvent(tagsWith(['u', 'http://bees.example.com:7777/'], ['method', 'POST'], ['payload', BODY_HASH.toUpperCase()]))),
    ],
  ])('accepts %s', (_, value) => {
    expect(checkNip98(value, expectation).ok).toBe(true)
  })

  it.each([
    ['a missing header', undefined, 'auth-required'],
    ['an empty header', '', 'auth-required'],
    ['another scheme', `Bearer ${btoa(JSON.stringify(authEvent()))}`, 'invalid'],
    ['a scheme without a token', 'Nostr', 'invalid'],
    ['a token that is not base64', 'Nostr not*base64', 'invalid'],
    ['base64 of something that is not JSON', `Nostr ${btoa('hello')}`, 'invalid'],
    ['base64 of a JSON array', header([1, 2]), 'invalid'],
    ['an event with a malformed id', header(authEvent({ id: 'xyz' })), 'invalid'],
    ['the wrong kind', header(authEvent({ kind: 22_242 })), 'invalid'],
    ['created_at 61 s ago', header(authEvent({ created_at: NOW - 61 })), 'invalid'],
    ['created_at 61 s ahead', header(authEvent({ created_at: NOW + 61 })), 'invalid'],
    ['no u tag', header(authEvent(tagsWith(['method', 'POST'], ['payload', BODY_HASH]))), 'invalid'],
    [
      'a u tag naming another host',
      header(authEvent(tagsWith(['u', 'http://wasps.example.com:7777/'], ['method', 'POST'], ['payload', BODY_HASH]))),
      'invalid',
    ],
    [
      'a u tag naming another port',
      header(authEvent(tagsWith(['u', 'http://bees.example.com:7778/'], ['method', 'POST'], ['payload', BODY_HASH]))),
      'invalid',
    ],
    [
      'a u tag naming https for an http request',
      header(authEvent(tagsWith(['u', 'https://bees.example.com:7777/'], ['method', 'POST'], ['payload', BODY_HASH]))),
      'invalid',
    ],
    [
      'a u tag with another path',
      header(authEvent(tagsWith(['u', 'http://bees.example.com:7777/admin'], ['method', 'POST'], ['payload', BODY_HASH]))),
      'invalid',
    ],
    [
      'a u tag with a query the request lacks',
      header(authEvent(tagsWith(['u', 'http://bees.example.com:7777/?a=1'], ['method', 'POST'], ['payload', BODY_HASH]))),
      'invalid',
    ],
    [
      'a ws:// u tag',
      header(authEvent(tagsWith(['u', 'ws://bees.example.com:7777/'], ['method', 'POST'], ['payload', BODY_HASH]))),
      'invalid',
    ],
    ['no method tag', header(authEvent(tagsWith(['u', 'http://bees.example.com:7777/'], ['payload', BODY_HASH]))), 'invalid'],
    [
      'another method',
      header(authEvent(tagsWith(['u', 'http://bees.example.com:7777/'], ['method', 'GET'], ['payload', BODY_HASH]))),
      'invalid',
    ],
    [
      'a payload tag for another body',
      header(authEvent(tagsWith(['u', 'http://bees.example.com:7777/'], ['method', 'POST'], ['payload', 'f'.repeat(64)]))),
      'invalid',
    ],
  ])('refuses %s', (_, value, prefix) => {
    const r = checkNip98(value, expectation)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(prefixOf(r.error)).toBe(prefix)
  })

  it('treats a missing payload tag as NIP-98 does (optional) unless the caller requires one, as NIP-86 does', () => {
    const noPayload = header(authEvent(tagsWith(['u', 'http://bees.example.com:7777/'], ['method', 'POST'])))
    expect(checkNip98(noPayload, expectation).ok).toBe(true)
    expect(checkNip98(noPayload, { ...expectation, requirePayload: true }).ok).toBe(false)
  })

  it('leaves the payload tag unchecked when the caller has no body hash', () => {
    const otherBody = header(authEvent(tagsWith(['u', 'http://bees.example.com:7777/'], ['method', 'POST'], ['payload', 'f'.repeat(64)])))
    expect(checkNip98(otherBody, { ...expectation, bodySha256Hex: undefined }).ok).toBe(true)
  })

  it('does not check the signature (the verifier does)', () => {
    expect(checkNip98(header(authEvent({ sig: '0'.repeat(128) })), expectation).ok).toBe(true)
  })
})

describe('normalizing a NIP-98 URL', () => {
  it.each([
    ['HTTPS://Relay.Example.COM:443/', 'https://relay.example.com/'],
    ['http://relay.example.com:80', 'http://relay.example.com/'],
    ['http://relay.example.com.:8080/x?y=1#frag', 'http://relay.example.com:8080/x?y=1'],
    ['http://[::1]:7777/', 'http://[::1]:7777/'],
    ['http://relay.example.com/a/', 'http://relay.example.com/a/'],
  ])('%s → %s', (input, out) => {
    expect(normalizeHttpUrl(input)).toBe(out)
  })

  it.each([['wss://relay.example.com/'], ['http://user:pw@relay.example.com/'], ['not a url'], ['']])('refuses %s', (input) => {
    expect(normalizeHttpUrl(input)).toBeUndefined()
  })
})
