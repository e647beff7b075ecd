// The console's HTTP side as this node serves it, part of the composition root: its sessions in Redis in a
// cluster (a sign-in on one node is good on every node) or in memory, sign-in checked with the node's verifier,
// replay guard and per-IP `api` budget. Undefined when `console.enabled` is off.
import type { Config } from '../infra/config.js'
import type { Admission } from '../infra/gates/rate-limit.js'
import type { ReplayGuard } from '../infra/gates/replay-guard.js'
import type { ClientAddressing } from '../infra/http/client-ip.js'
import { loadConsoleAssets } from '../infra/http/console/console-assets.js'
import { type ConsoleRoutes, createConsoleRoutes } from '../infra/http/console/console-routes.js'
import type { OperatorAuth } from '../infra/http/operator-auth.js'
import type { Logger } from '../infra/log.js'
import type { Metrics } from '../infra/metrics.js'
import type { RedisClient } from '../infra/redis/connect.js'
import { createMemoryConsoleSessions } from '../infra/sessions/console-sessions.js'
import { createRedisConsoleSessions } from '../infra/sessions/redis-console-sessions.js'
import type { Verifier } from '../infra/verify/verifier.js'

export interface ConsoleHttpDeps {
  config: Config
  redis?: RedisClient
  verifier: Verifier
  replayGuard: ReplayGuard
  admitApiIp(ip: string): Promise<Admission>
  addressing: ClientAddressing
  operator: OperatorAuth
  metrics: Metrics
  log: Logger
}

export function openConsoleHttp(d: ConsoleHttpDeps): ConsoleRoutes | undefined {
  if (!d.config.console.enabled) return undefined
  return createConsoleRoutes({
    assets: loadConsoleAssets(),
    sessions: d.redis ? createRedisConsoleSessions(d.redis) : createMemoryConsoleSessions(),
    addressing: d.addressing,
    verifier: d.verifier,
    replayGuard: d.replayGuard,
    admitApiIp: d.admitApiIp,
    operator: d.operator,
    sessionTtlSeconds: d.config.console.sessionTtlSeconds,
    metrics: { signIns: d.metrics.consoleSignIns, signatureChecks: d.metrics.nip86SignatureChecks },
    nowMs: Date.now,
    log: d.log,
  })
}
