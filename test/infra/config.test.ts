import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/infra/config'
import { configTableMarkdown } from '../../src/infra/config-doc'

describe('configuration', () => {
  it('gives the contract defaults: port 7777, host 127.0.0.1, data in ./data', () => {
    const c = loadConfig({ env: {} })
    expect([c.port, c.host, c.dataDir]).toEqual([7777, '127.0.0.1', './data'])
  })

  it('reads APIARY_PORT, APIARY_HOST, APIARY_DATA_DIR and schema-derived nested names', () => {
    const c = loadConfig({
      env: { APIARY_PORT: '8080', APIARY_HOST: '0.0.0.0', APIARY_DATA_DIR: '/tmp/x', APIARY_LIMITS_MAX_EVENT_BYTES: '1000' },
    })
    expect([c.port, c.host, c.dataDir, c.limits.maxEventBytes]).toEqual([8080, '0.0.0.0', '/tmp/x', 1000])
    expect(c.limits.maxFilters).toBe(10)
  })

  it('reads booleans from env as words, so "false" stays false', () => {
    expect(loadConfig({ env: { APIARY_AUTH_REQUIRED: 'false' } }).authRequired).toBe(false)
    expect(loadConfig({ env: { APIARY_AUTH_REQUIRED: 'true' } }).authRequired).toBe(true)
  })

  it('lets overrides (CLI flags) win over env', () => {
    expect(loadConfig({ env: { APIARY_PORT: '1' }, overrides: { port: 2 } }).port).toBe(2)
  })

  it('refuses an invalid value with a ConfigError naming it', () => {
    expect(() => loadConfig({ env: { APIARY_PORT: 'seventy' } })).toThrow(ConfigError)
  })

  it('keeps the README config table identical to the schema (run `npm run docs` after changing it)', () => {
    expect(readFileSync('README.md', 'utf8')).toContain(configTableMarkdown())
  })
})
