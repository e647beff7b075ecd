import { describe, expect, it } from 'vitest'
import { JobBoard } from '../../../src/actors/jobs/job-board'

const job = (c: string) => c.repeat(64)
const REQUESTER = 'r'.repeat(64)
const AGENT = 'a'.repeat(64)

describe("a community's job board", () => {
  it("hands the holds a stopping dispatcher gave this node's connections to another board, and forgets the rest", () => {
    const board = new JobBoard()
    const delivered = new JobBoard()
    for (const [id, conn] of [
      [job('1'), 'conn-1'],
      [job('2'), `@${'e'.repeat(64)}/conn-9`],
    ] as const) {
      board.add(id, 'work', REQUESTER)
      board.hold(id, { conn, pubkey: AGENT, generation: 2 })
    }
    board.add(job('3'), 'work', REQUESTER)
    board.add(job('4'), 'other', REQUESTER)
    board.handOver('work', delivered, (h) => !h.conn.startsWith('@'))
    expect([...delivered.holdsOf('work')]).toEqual([[job('1'), { conn: 'conn-1', pubkey: AGENT, generation: 2 }]])
    expect(delivered.openOf(REQUESTER)).toBe(1)
    expect([board.openCount('work'), board.openCount('other')]).toEqual([0, 1])
    expect(board.holderOf(job('1'))).toBeUndefined()
  })
})
