// The relay's internals that the bench measures alone, without a relay around them: the verifiers (the ingest
// ceiling), the SQLite and PostgreSQL stores (store cost), the admission gates and the mesh tunnel; and the
// console's one-time sign-in link, which the console scenario signs as `apiary console login` does. The one
// door from bench/ into src/ beyond the package's public entry points (bench/built-package.ts).

export { operatorGetAuthorization } from '../src/client/admin-client'
export { consoleLoginLink } from '../src/client/console-login'
export { createMemoryRateLimiter } from '../src/infra/gates/memory-rate-limit'
export type { Admission, RateRule } from '../src/infra/gates/rate-limit'
export type { AdmitRequest } from '../src/infra/gates/redis-rate-limit'
export { createRedisRateLimiter } from '../src/infra/gates/redis-rate-limit'
export { type Tunnel, TunnelError, type TunnelHandlers } from '../src/infra/mesh/tunnel'
export { dialTunnel, startTunnelServer, type TunnelSetup } from '../src/infra/mesh/tunnel-handshake'
export { rateLimitKey } from '../src/infra/redis/keys'
export { openPostgresEventStore } from '../src/infra/store/postgres/postgres-event-store'
export { savePlan } from '../src/infra/store/sqlite/sqlite-save'
export { applyPragmas, migrate } from '../src/infra/store/sqlite/sqlite-schema'
export { createWriteRunner } from '../src/infra/store/sqlite/sqlite-write-core.mjs'
export { CHECKPOINT_INTERVAL_MS } from '../src/infra/store/sqlite/wal-checkpointer'
export { createInlineVerifier, createNobleVerifier } from '../src/infra/verify/inline-verifier'
export type { Verifier } from '../src/infra/verify/verifier'
export { createVerifierPool } from '../src/infra/verify/verifier-pool'
export { attestRuntime } from '../src/protocols/mesh/attestation'
export type { MeshIdentity } from '../src/protocols/mesh/hello'
export type { MeshStatus } from '../src/protocols/mesh/status'
export { toSigningKey } from '../src/protocols/nip01/sign'
