// Slow HTTP: a client that opens sockets and sends its request headers a byte at a time holds each socket, a
// file descriptor and a parser, for as long as the server waits. The server's headersTimeout/requestTimeout
// bound how long (node.ts sets them from config); this bounds how many such sockets one client address may
// hold at once, and counts what each of the two closes.
import type { IncomingMessage, Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex } from 'node:stream'

export interface SlowHttpDeps {
  /** most sockets per key whose first request (or upgrade) has not arrived whole */
  maxPendingPerIp: number
  /** what a socket is counted under (its peer's principal); undefined: not counted (a trusted proxy's) */
  keyOf(peer: string | undefined): string | undefined
  /** a socket closed: over the pending cap, or its request too slow (node's headersTimeout/requestTimeout) */
  onClosed(reason: 'too-many-pending' | 'timeout'): void
}

/** node's connection checker runs this often; its default (30 s) would add up to 30 s to every timeout */
export function checkingIntervalMs(headersTimeoutMs: number): number {
  return Math.max(50, Math.min(1_000, Math.floor(headersTimeoutMs / 4)))
}

export function guardSlowHttp(server: Server, d: SlowHttpDeps): void {
  const pending = new Map<string, number>()
  const settle = new WeakMap<Socket, () => void>()
  server.on('connection', (socket: Socket) => {
    const key = d.keyOf(socket.remoteAddress)
    if (key === undefined) return
    const held = pending.get(key) ?? 0
    if (held >= d.maxPendingPerIp) {
      d.onClosed('too-many-pending')
      return void socket.destroy()
    }
    pending.set(key, held + 1)
    let counted = true
    const done = () => {
      if (!counted) return
      counted = false
      const left = (pending.get(key) ?? 1) - 1
      if (left > 0) pending.set(key, left)
      else pending.delete(key)
    }
    settle.set(socket, done)
    socket.once('close', done)
  })
  // the first request's headers are in: from here the request and upgrade paths bound the socket
  const arrived = (req: IncomingMessage) => settle.get(req.socket)?.()
  server.prependListener('request', arrived)
  server.prependListener('upgrade', arrived)
  // Answered as node would without a listener (408 for a timeout, 400 for a malformed request), counted.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    if (timedOut) d.onClosed('timeout')
    if (error.code === 'ECONNRESET' || !socket.writable) return void socket.destroy()
    const status = timedOut
      ? '408 Request Timeout'
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? '431 Request Header Fields Too Large'
        : '400 Bad Request'
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
    socket.destroy()
  })
}
