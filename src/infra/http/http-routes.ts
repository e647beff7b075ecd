import type { IncomingMessage, ServerResponse } from 'node:http'
import { MESH_STATUS_DISABLED, type MeshStatus } from '../../protocols/mesh/status.js'
import type { Metrics } from '../metrics.js'
import type { ConsoleRoutes } from './console/console-routes.js'
import { isConsolePath } from './console/console-routes.js'
import type { ConsoleSource } from './console/console-source.js'
import { isManagementRequest } from './nip86/endpoint.js'
import type { OperatorAuth } from './operator-auth.js'

/** What the HTTP side needs from the node; the composition root provides it. */
export interface HttpSurface {
  metrics: Metrics
  /** NIP-11 document for the community bound to this host, or undefined when the host is unknown */
  relayInfo(host: string | undefined): object | undefined
  isKnownHost(host: string | undefined): boolean
  /** `degraded` names what is wrong: a backend (`postgres`, `redis`, `sqlite`) or an actor path (`community/x`) */
  health(): Promise<{ ready: boolean; degraded: string[] }>
  /** NIP-86 management (nip86/endpoint.ts): resolves the community itself, answers 404 for an unknown host */
  manage(req: IncomingMessage, res: ServerResponse): Promise<void>
  /** this node's view of the mesh (protocols/mesh/status.ts); undefined while the mesh is off */
  meshStatus?: () => MeshStatus
  /** whether a request carries an operator's NIP-98 (operator-auth.ts): the node's detail is theirs only */
  operator: OperatorAuth
  /** the operator console (console/console-routes.ts); undefined when `console.enabled` is off: /console is 404 */
  console?: ConsoleRoutes
  /** what the console shows; undefined until the node provides one: the console's API answers 503 */
  consoleSource?: ConsoleSource
}

const CORS = {
  'Access-Control-Allow-Origin': '*',
  // the Fetch spec never lets `*` cover Authorization: a browser's NIP-86 preflight needs it named
  'Access-Control-Allow-Headers': 'Authorization, *',
  'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
}

const send = (res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}) => {
  res.writeHead(status, { 'Content-Type': type, ...extra })
  res.end(body)
}

const json = (value: unknown) => `${JSON.stringify(value)}\n`

/**
 * GET / (NIP-11 or a short text), POST / (NIP-86), /metrics, /mesh/status, /health/live, /health/ready, /console.
 * The node's own endpoints (health, metrics, mesh status, the console) answer on any host; for the rest an unknown host ⇒ 404.
 * What names communities or sessions (mesh status, what is degraded) is served to operators only.
 */
export async function handleHttp(req: IncomingMessage, res: ServerResponse, s: HttpSurface): Promise<void> {
  const path = (req.url ?? '/').split('?')[0] ?? '/'
  if (path === '/health/live') return send(res, 200, 'text/plain', 'ok\n')
  if (path === '/health/ready') {
    const health = await s.health().catch(() => ({ ready: false, degraded: ['health check failed'] }))
    const status = health.ready ? 200 : 503
    // a probe without credentials learns ready or not; one that brings them and fails is told why
    if (req.headers.authorization === undefined) return send(res, status, 'application/json', json({ ready: health.ready }))
    const operator = await s.operator(req)
    if (!operator.ok) return send(res, operator.error.status, 'application/json', json({ error: operator.error.why }))
    return send(res, status, 'application/json', json(health))
  }
  if (path === '/metrics') return send(res, 200, s.metrics.registry.contentType, await s.metrics.registry.metrics())
  if (path === '/mesh/status') {
    if (s.meshStatus === undefined) return send(res, 404, 'application/json', json(MESH_STATUS_DISABLED))
    const operator = await s.operator(req)
    if (!operator.ok) return send(res, operator.error.status, 'application/json', json({ error: operator.error.why }))
    return send(res, 200, 'application/json', json(s.meshStatus()))
  }
  if (isConsolePath(path)) return s.console ? s.console.handle(req, res, s.consoleSource) : send(res, 404, 'text/plain', 'not found\n')
  if (!s.isKnownHost(req.headers.host)) return send(res, 404, 'text/plain', 'not found\n')
  if (req.method === 'OPTIONS') {
    res.writeHead(204, CORS)
    return void res.end()
  }
  if (path === '/' && req.method === 'GET') {
    if ((req.headers.accept ?? '').includes('application/nostr+json')) {
      return send(res, 200, 'application/nostr+json', JSON.stringify(s.relayInfo(req.headers.host)), CORS)
    }
    return send(res, 200, 'text/plain', 'This is a Nostr relay (Apiary). Connect with a Nostr client over WebSocket.\n', CORS)
  }
  if (path === '/' && isManagementRequest(req)) return s.manage(req, res)
  return send(res, 404, 'text/plain', 'not found\n')
}
