// A TCP port free on 127.0.0.1 now (the OS picks; released at once for a server to bind): for a relay the bench
// starts on a port of its choosing (strfry takes it in its config; the agents' relay keeps it across restarts).
import { createServer } from 'node:net'

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}
