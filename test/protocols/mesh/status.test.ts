import { describe, expect, it } from 'vitest'
import { MESH_STATUS_DISABLED, type MeshStatus, parseMeshStatus } from '../../../src/protocols/mesh/status'
import { prefixOf } from '../../../src/protocols/reasons'

const SELF = 'a1'.repeat(32)
const PEER = 'b2'.repeat(32)

const status = (): MeshStatus => ({
  runtime: SELF,
  draining: true,
  peers: [{ runtime: PEER, endpoint: 'wss://node-2.hive.test/mesh', phi: 8.5, suspect: true, connected: false }],
  sessions: [{ community: 'default', session: 'channel:general', kind: 'channel', generation: 7, owner: PEER, local: false }],
})

/** A status as plain JSON, open to any edit. */
type Doc = { [field: string]: unknown; peers: Record<string, unknown>[]; sessions: Record<string, unknown>[] }

/** `status()` with one change made by `edit` on a plain-JSON copy. */
const edited = (edit: (s: Doc) => void): Doc => {
  const s = JSON.parse(JSON.stringify(status())) as Doc
  edit(s)
  return s
}
const peer = (s: Doc) => s.peers[0] as Record<string, unknown>
const session = (s: Doc) => s.sessions[0] as Record<string, unknown>

describe('reading a mesh status document', () => {
  it('accepts the documented shape, including empty peers and sessions', () => {
    expect(parseMeshStatus(status())).toEqual({ ok: true, value: status() })
    const alone = { runtime: SELF, draining: false, peers: [], sessions: [] }
    expect(parseMeshStatus(alone)).toEqual({ ok: true, value: alone })
  })

  it.each<[string, (s: Doc) => void]>([
    ['a runtime id in upper case', (s: Doc) => (s.runtime = SELF.toUpperCase())],
    ['a short runtime id', (s: Doc) => (s.runtime = SELF.slice(2))],
    ['draining as a string', (s: Doc) => (s.draining = 'false')],
    ['a missing peers list', (s: Doc) => Reflect.deleteProperty(s, 'peers')],
    ['an unknown top-level field', (s: Doc) => (s.version = 2)],
    ['a negative phi', (s: Doc) => (peer(s).phi = -0.1)],
    ['phi as a string', (s: Doc) => (peer(s).phi = '1.0')],
    ['a peer endpoint that is not ws(s)', (s: Doc) => (peer(s).endpoint = 'http://node-2:7778')],
    ['a peer endpoint with a space', (s: Doc) => (peer(s).endpoint = 'ws://node-2 7778')],
    ['a peer without connected', (s: Doc) => Reflect.deleteProperty(peer(s), 'connected')],
    ['an unknown peer field', (s: Doc) => (peer(s).load = 3)],
    ['a session id without its kind', (s: Doc) => (session(s).session = 'general')],
    ['a session id of an unknown kind', (s: Doc) => (session(s).session = 'room:general')],
    ['a kind other than the session id names', (s: Doc) => (session(s).kind = 'room')],
    ['a fractional generation', (s: Doc) => (session(s).generation = 1.5)],
    ['a generation as a string', (s: Doc) => (session(s).generation = '7')],
    ['an owner that is not a runtime id', (s: Doc) => (session(s).owner = 'node-2')],
    ['a community id in upper case', (s: Doc) => (session(s).community = 'Default')],
  ])('refuses %s with "invalid:"', (_what, edit) => {
    const parsed = parseMeshStatus(edited(edit))
    expect(parsed.ok).toBe(false)
    if (!parsed.ok) expect(prefixOf(parsed.error)).toBe('invalid')
  })

  it.each([
    ['null', null],
    ['a string', 'mesh is off'],
    ['the "mesh is off" answer', MESH_STATUS_DISABLED],
    ['an array', [status()]],
  ])('refuses %s with "invalid:"', (_what, json) => {
    const parsed = parseMeshStatus(json)
    expect(parsed.ok).toBe(false)
    if (!parsed.ok) expect(prefixOf(parsed.error)).toBe('invalid')
  })

  it('names where the document is malformed', () => {
    expect(parseMeshStatus(edited((s) => (peer(s).phi = -1)))).toEqual({
      ok: false,
      error: 'invalid: malformed mesh status at peers.0.phi',
    })
  })

  it('refuses a phi of Infinity or NaN handed over without a JSON round trip', () => {
    for (const phi of [Number.POSITIVE_INFINITY, Number.NaN]) {
      const s = status()
      s.peers[0] = { ...s.peers[0], phi } as MeshStatus['peers'][number]
      expect(parseMeshStatus(s).ok).toBe(false)
    }
  })
})
