// A request's body, read up to a bound: what a client sends is never buffered past `maxBytes`.
import type { IncomingMessage } from 'node:http'

/** The whole body, or undefined once it passes `maxBytes` (the rest is not read). */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length'] ?? 0) > maxBytes) return resolve(undefined)
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        req.removeAllListeners('data')
        req.pause()
        resolve(undefined)
      } else chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

/** The body as JSON, or undefined when it is larger than `maxBytes`, not JSON, or the request failed. */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const body = await readBody(req, maxBytes).catch(() => undefined)
  if (body === undefined) return undefined
  try {
    return JSON.parse(body.toString('utf8'))
  } catch {
    return undefined
  }
}
