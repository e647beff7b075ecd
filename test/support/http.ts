// Plain HTTP to a test relay with the headers a test chooses (fetch cannot set Host).
import { request } from 'node:http'
import type { TestRelay } from './relay'

export interface HttpAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** GET with a chosen Host header (fetch can't set one). */
export function httpGet(r: TestRelay, path: string, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: r.port, path, method: 'GET', headers }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        body += d
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}
