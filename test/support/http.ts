// Plain HTTP to a relay on 127.0.0.1 (in this process or its own) with the headers a test chooses (fetch
// cannot set Host).
import { request } from 'node:http'

export interface HttpAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** A relay's HTTP port on 127.0.0.1: a TestRelay, or a relay process's node. */
export interface HttpTarget {
  port: number
}

/** GET with a chosen Host header; `timeoutMs` fails it when a stopped process never answers. */
export function httpGet(r: HttpTarget, path: string, headers: Record<string, string> = {}, timeoutMs?: number): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: r.port, path, method: 'GET', headers, timeout: timeoutMs }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        body += d
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within ${timeoutMs} ms`)))
    req.on('error', reject)
    req.end()
  })
}
