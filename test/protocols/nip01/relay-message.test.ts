import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { toRawEvent } from '../../../src/protocols/nip01/event'
import { authFrame, closedFrame, countFrame, eoseFrame, eventFrame, noticeFrame, okFrame } from '../../../src/protocols/nip01/relay-message'
import { ID, shapeEvent } from '../fixtures'

describe('relay frames on the wire', () => {
  const raw = toRawEvent(shapeEvent())
  const table = [
    { name: 'EVENT', frame: eventFrame('s1', raw), wire: `["EVENT","s1",${raw}]` },
    { name: 'OK true', frame: okFrame(ID, true, ''), wire: `["OK","${ID}",true,""]` },
    {
      name: 'OK true duplicate',
      frame: okFrame(ID, true, 'duplicate: already have it'),
      wire: `["OK","${ID}",true,"duplicate: already have it"]`,
    },
    {
      name: 'OK false',
      frame: okFrame(ID, false, 'invalid: bad signature'),
      wire: `["OK","${ID}",false,"invalid: bad signature"]`,
    },
    { name: 'EOSE', frame: eoseFrame('s1'), wire: '["EOSE","s1"]' },
    {
      name: 'CLOSED',
      frame: closedFrame('s1', 'auth-required: sign in first'),
      wire: '["CLOSED","s1","auth-required: sign in first"]',
    },
    { name: 'NOTICE', frame: noticeFrame('invalid: message is not JSON'), wire: '["NOTICE","invalid: message is not JSON"]' },
    { name: 'AUTH', frame: authFrame('chal'), wire: '["AUTH","chal"]' },
    { name: 'COUNT', frame: countFrame('s1', 42), wire: '["COUNT","s1",{"count":42}]' },
  ]

  it.each(table)('writes $name exactly', ({ frame, wire }) => {
    expect(frame).toBe(wire)
  })

  it('embeds the stored raw event byte for byte', () => {
    const odd = toRawEvent(shapeEvent({ content: 'é\n"🐝\\', tags: [['t', '\u0000']] }))
    const frame = eventFrame('s', odd)
    expect(frame.slice(frame.length - 1 - odd.length, -1)).toBe(odd)
    expect(JSON.parse(frame)[2]).toEqual(JSON.parse(odd))
  })

  it('keeps any subscription id inside its JSON string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (subId) => {
        expect(JSON.parse(eventFrame(subId, raw))).toEqual(['EVENT', subId, JSON.parse(raw)])
        expect(JSON.parse(closedFrame(subId, 'invalid: x'))).toEqual(['CLOSED', subId, 'invalid: x'])
        expect(JSON.parse(eoseFrame(subId))).toEqual(['EOSE', subId])
      }),
    )
  })
})
