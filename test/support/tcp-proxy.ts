import { createConnection, createServer, type Server, type Socket } from 'node:net'

export interface TcpProxy {
  port: number
  /** the path breaks: every open connection is destroyed and new ones are refused (see TcpProxyOptions) */
  cut(): void
  /** new connections are forwarded again (the ones cut stay gone) */
  restore(): void
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

/**
 * A TCP forwarder on 127.0.0.1 to `targetPort`, for fault tests that make a backend unreachable without
 * touching the shared server (other test files keep using it).
 */
export async function startTcpProxy(targetPort: number, opts: TcpProxyOptions = {}): Promise<TcpProxy> {
  const whenCut = opts.whenCut ?? 'refuse'
  const sockets = new Set<Socket>()
  let open = true
  let closed = false
  const track = (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    // a reset is the expected way these sockets end
    s.on('error', () => s.destroy())
  }
  const onConnection = (downstream: Socket) => {
    track(downstream)
    if (!open) return downstream.destroy()
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort })
    track(upstream)
    downstream.pipe(upstream)
    upstream.pipe(downstream)
    downstream.on('close', () => upstream.destroy())
    upstream.on('close', () => downstream.destroy())
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
    async close() {
      closed = true
      open = false
      destroyAll()
      await stopListening()
    },
  }
}
