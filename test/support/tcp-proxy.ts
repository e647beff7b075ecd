import { createConnection, createServer, type Server, type Socket } from 'node:net'

export interface TcpProxy {
  port: number
  /** connections accepted so far (a client that drops a stalled connection and opens another shows here) */
  readonly accepted: number
  /** the path breaks: every open connection is destroyed and new ones are refused (see TcpProxyOptions) */
  cut(): void
  /** new connections are forwarded again (the ones cut stay gone) */
  restore(): void
  /**
   * The path hangs without breaking, as in a partition or a server stuck on I/O: nothing is forwarded in
   * either direction and no connection is closed. Bytes are held, not dropped (TCP pushes back on the
   * sender); an end or a close of one side is held too. New connections are accepted and held the same way.
   */
  stall(): void
  /** forwards everything held, in order, then flows again */
  resume(): void
  close(): Promise<void>
}

export interface TcpProxyOptions {
  /**
   * How new connections are refused while cut. 'refuse' (default): nothing listens, connect() fails with
   * ECONNREFUSED, as when the server's host is up and the server is not. 'accept-and-close': the connection is
   * accepted, then closed before a byte is exchanged, as a pooler or load balancer in front of a dead server does.
   */
  whenCut?: 'refuse' | 'accept-and-close'
}

/** One direction of one proxied connection. */
interface Lane {
  from: Socket
  to: Socket
  /** chunks read before the source could be paused by a stall */
  held: Buffer[]
  /** the source ended while stalled: end the destination on resume */
  endHeld: boolean
}

/**
 * A TCP forwarder on 127.0.0.1 to `targetPort`, for fault tests that make a backend unreachable or
 * unresponsive without touching the shared server (other test files keep using it).
 */
export async function startTcpProxy(targetPort: number | (() => number), opts: TcpProxyOptions = {}): Promise<TcpProxy> {
  const whenCut = opts.whenCut ?? 'refuse'
  const sockets = new Set<Socket>()
  const lanes = new Set<Lane>()
  // sockets whose peer closed while stalled: destroyed on resume (a stall lets no close through)
  const closesHeld = new Set<Socket>()
  let open = true
  let closed = false
  let stalled = false
  const track = (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    // a reset is the expected way these sockets end
    s.on('error', () => s.destroy())
  }
  // Hand-rolled instead of pipe(): pipe resumes a paused source on the destination's 'drain', which would
  // leak bytes through a stall.
  const forward = (from: Socket, to: Socket) => {
    const lane: Lane = { from, to, held: [], endHeld: false }
    lanes.add(lane)
    from.on('data', (chunk: Buffer) => {
      if (stalled) {
        lane.held.push(chunk)
        from.pause()
      } else if (!to.write(chunk)) {
        from.pause()
        to.once('drain', () => {
          if (!stalled) from.resume()
        })
      }
    })
    from.on('end', () => {
      if (stalled) lane.endHeld = true
      else to.end()
    })
    from.on('close', () => {
      lanes.delete(lane)
      if (stalled) closesHeld.add(to)
      else to.destroy()
    })
  }
  let accepted = 0
  const onConnection = (downstream: Socket) => {
    accepted++
    track(downstream)
    if (!open) return downstream.destroy()
    const upstream = createConnection({ host: '127.0.0.1', port: typeof targetPort === 'number' ? targetPort : targetPort() })
    track(upstream)
    if (stalled) {
      downstream.pause()
      upstream.pause()
    }
    forward(downstream, upstream)
    forward(upstream, downstream)
  }
  const listen = (port: number) =>
    new Promise<Server>((resolve, reject) => {
      const s = createServer(onConnection)
      s.once('error', reject)
      s.listen(port, '127.0.0.1', () => resolve(s))
    })
  let server: Server | undefined = await listen(0)
  const { port } = server.address() as { port: number }
  const destroyAll = () => {
    for (const s of sockets) s.destroy()
    sockets.clear()
    lanes.clear()
    closesHeld.clear()
  }
  const stopListening = () =>
    new Promise<void>((resolve) => {
      const s = server
      server = undefined
      if (!s) return resolve()
      s.close(() => resolve())
    })
  return {
    port,
    get accepted() {
      return accepted
    },
    cut() {
      open = false
      if (whenCut === 'refuse') void stopListening()
      destroyAll()
    },
    restore() {
      open = true
      if (server || closed) return
      // the OS released the port when we stopped listening; nothing else binds 127.0.0.1:<port> meanwhile
      void listen(port).then((s) => {
        if (closed) s.close()
        else server = s
      })
    },
    stall() {
      stalled = true
      for (const lane of lanes) lane.from.pause()
    },
    resume() {
      if (!stalled) return
      stalled = false
      for (const s of closesHeld) s.destroy()
      closesHeld.clear()
      for (const lane of lanes) {
        if (lane.to.destroyed) continue
        for (const chunk of lane.held.splice(0)) lane.to.write(chunk)
        if (lane.endHeld) lane.to.end()
        lane.from.resume()
      }
    },
    async close() {
      closed = true
      open = false
      destroyAll()
      await stopListening()
    },
  }
}
