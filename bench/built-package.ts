// The relay as a user installs it: `apiary-relay` and `apiary-relay/client`, loaded from the compiled dist/
// (`npm run bench` builds it first). Under tsx every function would carry esbuild's `__name` property, a cost
// production does not pay. The types come from the package's two entry points; a path in a variable keeps
// the typecheck independent of whether dist/ has been built.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export type { AgentClient, AgentClientOptions, AgentStateChange, PublishResult } from '../src/client/index'
export type { ConfigInput, NostrEvent, VerifiedEvent } from '../src/index'

type RelayPackage = typeof import('../src/index')
type ClientPackage = typeof import('../src/client/index')

const RELAY_ENTRY = '../dist/index.js'
const CLIENT_ENTRY = '../dist/client/index.js'

/** Why the built package cannot be loaded (undefined when it can): the bench then stops before any scenario. */
export function builtPackageMissing(): string | undefined {
  const entry = fileURLToPath(new URL(RELAY_ENTRY, import.meta.url))
  return existsSync(entry) ? undefined : `${entry} is missing: run \`npm run build\` (npm run bench does)`
}

export async function loadRelayPackage(): Promise<RelayPackage> {
  const entry: string = RELAY_ENTRY
  return (await import(entry)) as RelayPackage
}

export async function loadClientPackage(): Promise<ClientPackage> {
  const entry: string = CLIENT_ENTRY
  return (await import(entry)) as ClientPackage
}
