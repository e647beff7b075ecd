import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { CommunityMsg } from '../../src/actors/community/messages'
import type { TypedRef } from '../../src/actors/kernel'
import type { ConfigInput } from '../../src/infra/config'
import { createRelay, type Relay, type RelayOptions } from '../../src/relay/relay'

export interface TestRelay {
  relay: Relay
  url: string
  port: number
  dataDir: string
  /** close the relay; `keepData` leaves the directory for a restart test */
  close(opts?: { keepData?: boolean }): Promise<void>
}

/** A real relay on 127.0.0.1, port 0, in a fresh data directory, quiet logs. */
export async function startTestRelay(overrides: ConfigInput = {}, dataDir?: string, opts: RelayOptions = {}): Promise<TestRelay> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'apiary-test-'))
  const relay = createRelay({ port: 0, host: '127.0.0.1', dataDir: dir, logLevel: 'silent', verifyThreads: 1, ...overrides }, opts)
  const url = await relay.listen()
  return {
    relay,
    url,
    port: Number(new URL(url).port),
    dataDir: dir,
    async close(opts = {}) {
      await relay.close()
      if (!opts.keepData) rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * The community actor with every message it takes, for tests that play its connections or its own I/O;
 * a host's `relay.community(id)` is typed to the host messages only (the ref is the same).
 */
export function communityActor(relay: Relay, id: string): TypedRef<CommunityMsg> {
  const ref = relay.community(id) as TypedRef<CommunityMsg> | undefined
  if (!ref) throw new Error(`community ${id} is not served`)
  return ref
}
