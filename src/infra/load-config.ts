// Where the effective configuration is assembled: defaults, a config file, APIARY_* env and overrides, checked
// by the schema (config.ts). Apart from the schema so the package's declarations for it never import zod.
import { readFileSync } from 'node:fs'
import { z } from 'zod'
import { configSchema, listSettings } from './config.js'
import type { Config, ConfigInput } from './config-types.js'

/** The configuration can't be used: `message` names the setting and what is wrong with it. */
export class ConfigError extends Error {
  readonly code = 'APIARY_CONFIG_INVALID'
}

function fromEnvString(raw: string, like: unknown): unknown {
  if (typeof like === 'number') return Number(raw)
  if (typeof like === 'boolean') return raw
  if (Array.isArray(like)) return JSON.parse(raw)
  return raw
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown) {
  let o = target
  for (const p of path.slice(0, -1)) {
    if (typeof o[p] !== 'object' || o[p] === null) o[p] = {}
    o = o[p] as Record<string, unknown>
  }
  o[path[path.length - 1]!] = value
}

function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base }
  for (const [k, v] of Object.entries(over)) {
    const b = out[k]
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' && !Array.isArray(b)
        ? merge(b as Record<string, unknown>, v as Record<string, unknown>)
        : v
  }
  return out
}

export interface LoadConfigSources {
  env?: Record<string, string | undefined>
  file?: string
  overrides?: ConfigInput
}

/** defaults ← config file (JSON) ← APIARY_* env ← overrides (CLI flags, createRelay options). */
export function loadConfig(sources: LoadConfigSources = {}): Config {
  let input: Record<string, unknown> = {}
  if (sources.file) input = JSON.parse(readFileSync(sources.file, 'utf8')) as Record<string, unknown>
  const env = sources.env ?? {}
  const fromEnv: Record<string, unknown> = {}
  for (const s of listSettings()) {
    const raw = env[s.env]
    if (raw !== undefined && raw !== '') setPath(fromEnv, s.path, fromEnvString(raw, s.defaultValue))
  }
  input = merge(merge(input, fromEnv), (sources.overrides ?? {}) as Record<string, unknown>)
  const parsed = configSchema.safeParse(input)
  if (!parsed.success) throw new ConfigError(`invalid config: ${z.prettifyError(parsed.error)}`)
  return parsed.data
}
