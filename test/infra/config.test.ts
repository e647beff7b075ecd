import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { configurationMarkdown, matchesReasonKey, mostUsedSettingsMarkdown } from '../../scripts/config-doc'
import { CONFIG_REASONS } from '../../scripts/config-reasons'
import { listSettings } from '../../src/infra/config'
import { ConfigError, loadConfig } from '../../src/infra/load-config'

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

  it('reads APIARY_TRUSTED_PROXIES as a JSON array of IPv4 and IPv6 addresses and ranges, empty by default', () => {
    expect(loadConfig({ env: {} }).trustedProxies).toEqual([])
    const c = loadConfig({ env: { APIARY_TRUSTED_PROXIES: '["127.0.0.1","10.0.0.0/8","fd00::/8"]' } })
    expect(c.trustedProxies).toEqual(['127.0.0.1', '10.0.0.0/8', 'fd00::/8'])
  })

  it.each([
    ['a host name', '["proxy.internal"]'],
    ['a prefix too long', '["10.0.0.0/33"]'],
    ['an address with a port', '["10.0.0.1:80"]'],
  ])('refuses a trusted proxy that is %s with a ConfigError', (_, json) => {
    expect(() => loadConfig({ env: { APIARY_TRUSTED_PROXIES: json } })).toThrow(ConfigError)
  })

  it('reads the per-IP connection count and NIP-86 budget, with their defaults', () => {
    const d = loadConfig({ env: {} })
    expect([d.limits.maxConnectionsPerIp, d.rateLimits.apiPerIp]).toEqual([200, { ratePerSecond: 50, burst: 200 }])
    const c = loadConfig({ env: { APIARY_LIMITS_MAX_CONNECTIONS_PER_IP: '5', APIARY_RATE_LIMITS_API_PER_IP_BURST: '7' } })
    expect([c.limits.maxConnectionsPerIp, c.rateLimits.apiPerIp.burst]).toEqual([5, 7])
  })

  it('reads APIARY_MESH, APIARY_MESH_PORT and the lease timings, off by default with a 6 s lease renewed every 2 s', () => {
    const d = loadConfig({ env: {} })
    expect([d.mesh, d.meshPort, d.meshLeaseTtlMs, d.meshLeaseRenewMs]).toEqual(['off', 7778, 6_000, 2_000])
    const cluster = { APIARY_REDIS_URL: 'redis://127.0.0.1:6379', APIARY_DATABASE_URL: 'postgres://127.0.0.1/test' }
    const c = loadConfig({
      env: { ...cluster, APIARY_MESH: 'on', APIARY_MESH_PORT: '9000', APIARY_MESH_ADVERTISED_ADDRESS: 'node-2.internal:9001' },
    })
    expect([c.mesh, c.meshPort, c.meshAdvertisedAddress]).toEqual(['on', 9000, 'node-2.internal:9001'])
    expect(() => loadConfig({ env: { ...cluster, APIARY_MESH: 'yes' } })).toThrow(ConfigError)
  })

  it('refuses the mesh without cluster mode, and a renewal interval over half the lease', () => {
    expect(() => loadConfig({ env: { APIARY_MESH: 'on' } })).toThrow(/mesh "on" needs cluster mode/)
    expect(() => loadConfig({ env: { APIARY_MESH: 'on', APIARY_REDIS_URL: 'redis://127.0.0.1:6379' } })).toThrow(ConfigError)
    expect(loadConfig({ env: { APIARY_MESH_LEASE_TTL_MS: '4000', APIARY_MESH_LEASE_RENEW_MS: '2000' } }).meshLeaseRenewMs).toBe(2_000)
    expect(() => loadConfig({ env: { APIARY_MESH_LEASE_TTL_MS: '3999', APIARY_MESH_LEASE_RENEW_MS: '2000' } })).toThrow(/at most half/)
  })

  it('reads APIARY_STORE_DURABILITY, process (survives a relay crash) by default, and refuses other words', () => {
    expect(loadConfig({ env: {} }).store.durability).toBe('process')
    expect(loadConfig({ env: { APIARY_STORE_DURABILITY: 'power' } }).store.durability).toBe('power')
    expect(() => loadConfig({ env: { APIARY_STORE_DURABILITY: 'disk' } })).toThrow(ConfigError)
  })

  it('refuses a read budget that the reader backstop would cut short', () => {
    expect(loadConfig({ env: { APIARY_LIMITS_READ_BUDGET_MS: '4999' } }).limits.readBudgetMs).toBe(4_999)
    expect(() => loadConfig({ env: { APIARY_LIMITS_READ_BUDGET_MS: '5000' } })).toThrow(/must be below store.queryTimeoutMs/)
  })

  it('takes the mesh TLS certificate and key together or not at all, empty (plain ws://) by default', () => {
    const d = loadConfig({ env: {} })
    expect([d.meshTlsCertFile, d.meshTlsKeyFile, d.meshTlsCaFile]).toEqual(['', '', ''])
    const both = { APIARY_MESH_TLS_CERT_FILE: '/etc/apiary/mesh.crt', APIARY_MESH_TLS_KEY_FILE: '/etc/apiary/mesh.key' }
    expect(loadConfig({ env: { ...both, APIARY_MESH_TLS_CA_FILE: '/etc/apiary/ca.crt' } }).meshTlsCaFile).toBe('/etc/apiary/ca.crt')
    expect(() => loadConfig({ env: { APIARY_MESH_TLS_CERT_FILE: both.APIARY_MESH_TLS_CERT_FILE } })).toThrow(ConfigError)
    expect(() => loadConfig({ env: { APIARY_MESH_TLS_KEY_FILE: both.APIARY_MESH_TLS_KEY_FILE } })).toThrow(
      /meshTlsCertFile and meshTlsKeyFile go together/,
    )
  })

  it('keeps docs/configuration.md and the README settings table identical to the schema (run `npm run docs` after changing it)', () => {
    expect(readFileSync('docs/configuration.md', 'utf8')).toBe(configurationMarkdown())
    expect(readFileSync('README.md', 'utf8')).toContain(mostUsedSettingsMarkdown())
  })

  it('gives a reason only for settings that exist, so none outlives its setting', () => {
    const paths = listSettings().map((s) => s.path)
    for (const key of Object.keys(CONFIG_REASONS))
      expect(
        paths.some((p) => matchesReasonKey(key, p)),
        key,
      ).toBe(true)
  })
})
