// An on-path attacker between two WebSocket peers (the mesh tunnel): a TCP forwarder on 127.0.0.1 that reads the
// WebSocket framing (RFC 6455 §5.2) of each direction after the HTTP upgrade and forwards whole frames, so it can
// alter, repeat or insert messages at a frame boundary the way someone on the wire could.
import { randomBytes } from 'node:crypto'
import { createConnection, createServer, type Server, type Socket } from 'node:net'

/** toServer: from the side that dialed (its frames are masked) to the one that accepted; toClient: the reverse. */
export type Direction = 'toServer' | 'toClient'

export interface WsTamperProxy {
  port: number
  /** TCP connections accepted so far (a redial is a new one) */
  accepted(): number
  /** the next binary message in `direction`, on every open connection, has one payload byte flipped */
  flipNext(direction: Direction): void
  /** on every open connection, the last binary message that went in `direction` is sent once more, now */
  replayLast(direction: Direction): void
  /** on every open connection, one binary message of `payload` is inserted in `direction`, now */
  inject(direction: Direction, payload: Uint8Array): void
  close(): Promise<void>
}

interface Lane {
  to: Socket
  masked: boolean
  buffered: Buffer
  upgraded: boolean
  flip: boolean
  last?: Buffer
}

/** the length of the complete frame at the start of `b`, or 0 when it is not all there yet */
function frameLength(b: Buffer): number {
  if (b.length < 2) return 0
  const len7 = b[1]! & 0x7f
  const masked = (b[1]! & 0x80) !== 0
  let header = 2
  let len = len7
  if (len7 === 126) {
    if (b.length < 4) return 0
    len = b.readUInt16BE(2)
    header = 4
  } else if (len7 === 127) {
    if (b.length < 10) return 0
    len = Number(b.readBigUInt64BE(2))
    header = 10
  }
  const total = header + (masked ? 4 : 0) + len
  return b.length >= total ? total : 0
}

/** A binary message's frame: FIN, opcode 2, masked with a fresh key when the client sends it. */
function binaryFrame(payload: Uint8Array, masked: boolean): Buffer {
  const len = payload.byteLength
  const ext = len < 126 ? 0 : len < 65_536 ? 2 : 8
  const head = Buffer.alloc(2 + ext + (masked ? 4 : 0))
  head[0] = 0x82
  head[1] = (masked ? 0x80 : 0) | (ext === 0 ? len : ext === 2 ? 126 : 127)
  if (ext === 2) head.writeUInt16BE(len, 2)
  if (ext === 8) head.writeBigUInt64BE(BigInt(len), 2)
  const body = Buffer.from(payload)
  if (masked) {
    const key = randomBytes(4)
    key.copy(head, 2 + ext)
    for (let i = 0; i < body.length; i++) body[i]! ^= key[i % 4]!
  }
  return Buffer.concat([head, body])
}

export async function startWsTamperProxy(targetPort: number): Promise<WsTamperProxy> {
  const sockets = new Set<Socket>()
  const lanes: Record<Direction, Set<Lane>> = { toServer: new Set(), toClient: new Set() }
  let accepted = 0

  function onData(lane: Lane, chunk: Buffer) {
    lane.buffered = Buffer.concat([lane.buffered, chunk])
    if (!lane.upgraded) {
      const end = lane.buffered.indexOf('\r\n\r\n')
      if (end < 0) return
      lane.to.write(lane.buffered.subarray(0, end + 4))
      lane.buffered = lane.buffered.subarray(end + 4)
      lane.upgraded = true
    }
    for (let n = frameLength(lane.buffered); n > 0; n = frameLength(lane.buffered)) {
      const frame = Buffer.from(lane.buffered.subarray(0, n))
      lane.buffered = lane.buffered.subarray(n)
      if ((frame[0]! & 0x0f) === 0x2) {
        if (lane.flip) {
          lane.flip = false
          frame[frame.length - 1]! ^= 0x01
        }
        lane.last = frame
      }
      lane.to.write(frame)
    }
  }

  const track = (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => s.destroy())
  }
  const server: Server = createServer((downstream) => {
    accepted++
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort })
    track(downstream)
    track(upstream)
    const up: Lane = { to: upstream, masked: true, buffered: Buffer.alloc(0), upgraded: false, flip: false }
    const down: Lane = { to: downstream, masked: false, buffered: Buffer.alloc(0), upgraded: false, flip: false }
    lanes.toServer.add(up)
    lanes.toClient.add(down)
    downstream.on('data', (c: Buffer) => onData(up, c))
    upstream.on('data', (c: Buffer) => onData(down, c))
    const end = () => {
      lanes.toServer.delete(up)
      lanes.toClient.delete(down)
      downstream.destroy()
      upstream.destroy()
    }
    downstream.on('close', end)
    upstream.on('close', end)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    port,
    accepted: () => accepted,
    flipNext(direction) {
      for (const lane of lanes[direction]) lane.flip = true
    },
    replayLast(direction) {
      for (const lane of lanes[direction]) if (lane.last) lane.to.write(lane.last)
    },
    inject(direction, payload) {
      for (const lane of lanes[direction]) if (lane.upgraded) lane.to.write(binaryFrame(payload, lane.masked))
    },
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
