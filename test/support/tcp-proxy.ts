import { createConnection, createServer, type Socket } from 'node:net'

export interface TcpProxy {
  port: number
  /** a crash of the network path: every open connection is destroyed and new ones are dropped on accept */
  cut(): void
  /** new connections are forwarded again (the ones cut stay gone) */
  restore(): void
  close(): Promise<void>
}

/**
 * A TCP forwarder on 127.0.0.1 to `targetPort`, for fault tests that make a backend unreachable without
 * touching the shared server (other test files keep using it).
 */
export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  let open = true
  const track = (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    // a peer reset is the expected way these sockets end
    s.on('error', () => s.destroy())
  }
  const server = createServer((client) => {
    track(client)
    if (!open) return client.destroy()
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort })
    track(upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as { port: number }
  const destroyAll = () => {
    for (const s of sockets) s.destroy()
    sockets.clear()
  }
  return {
    port,
    cut() {
      open = false
      destroyAll()
    },
    restore() {
      open = true
    },
    close: () =>
      new Promise<void>((resolve) => {
        destroyAll()
        server.close(() => resolve())
      }),
  }
}
