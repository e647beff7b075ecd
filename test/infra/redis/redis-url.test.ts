import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../../src/infra/load-config'
import { createLogger } from '../../../src/infra/log'
import { createRedisClient, parseRedisUrl, redactRedisUrl } from '../../../src/infra/redis/connect'
import { BackendUnavailableError } from '../../../src/infra/startup'
import { openBackends } from '../../../src/relay/backends'
import { freePort } from '../../support/redis-server'

describe('APIARY_REDIS_URL', () => {
  it.each([
    ['redis://127.0.0.1:6379', { mode: 'single', url: 'redis://127.0.0.1:6379' }],
    ['rediss://user:pw@redis.example:6380/2', { mode: 'single', url: 'rediss://user:pw@redis.example:6380/2' }],
    ['redis+cluster://127.0.0.1:7000', { mode: 'cluster', seeds: [{ host: '127.0.0.1', port: 7000 }] }],
    [
      'redis+cluster://a.example:7000,b.example:7001,10.0.0.3:7002/',
      {
        mode: 'cluster',
        seeds: [
          { host: 'a.example', port: 7000 },
          { host: 'b.example', port: 7001 },
          { host: '10.0.0.3', port: 7002 },
        ],
      },
    ],
    [
      'redis+cluster://apiary:p%40ss@a:7000,b:7001',
      {
        mode: 'cluster',
        seeds: [
          { host: 'a', port: 7000 },
          { host: 'b', port: 7001 },
        ],
        username: 'apiary',
        password: 'p@ss',
      },
    ],
    ['redis+cluster://:secret@a:7000', { mode: 'cluster', seeds: [{ host: 'a', port: 7000 }], password: 'secret' }],
    [
      'REDIS+CLUSTER://[::1]:7000,[fd00::2]:7001',
      {
        mode: 'cluster',
        seeds: [
          { host: '::1', port: 7000 },
          { host: 'fd00::2', port: 7001 },
        ],
      },
    ],
  ])('accepts %s', (url, target) => {
    expect(parseRedisUrl(url)).toEqual({ ok: true, value: target })
  })

  it.each([
    ['no scheme', '127.0.0.1:6379'],
    ['another scheme', 'http://127.0.0.1:6379'],
    ['no host', 'redis://'],
    ['a database that is not a number', 'redis://h:6379/x'],
    ['no seed', 'redis+cluster://'],
    ['a seed without a port', 'redis+cluster://a:7000,b'],
    ['port 0', 'redis+cluster://a:0'],
    ['a port past 65535', 'redis+cluster://a:65536'],
    ['an empty seed', 'redis+cluster://a:7000,,b:7001'],
    ['a database (a cluster has only 0)', 'redis+cluster://a:7000/1'],
    ['a query string', 'redis+cluster://a:7000?tls=1'],
    ['no //', 'redis+cluster:a:7000'],
    ['a broken %-escape', 'redis+cluster://u:%zz@a:7000'],
  ])('refuses %s', (_what, url) => {
    const parsed = parseRedisUrl(url)
    expect(parsed.ok).toBe(false)
    if (!parsed.ok) expect(parsed.error).toMatch(/redis\+cluster:\/\//)
  })

  it('never repeats a password in its error or in the redacted form', () => {
    for (const url of ['redis+cluster://u:hunter2@a:7000,b', 'redis://u:hunter2@', 'rediss://:hunter2@h:6380/x']) {
      const parsed = parseRedisUrl(url)
      expect(parsed.ok ? '' : parsed.error).not.toContain('hunter2')
      expect(redactRedisUrl(url)).not.toContain('hunter2')
    }
    expect(redactRedisUrl('redis+cluster://u:hunter2@a:7000,b:7001')).toBe('redis+cluster://u:***@a:7000,b:7001')
  })

  it('makes a malformed URL a ConfigError when the client is made, naming the setting', () => {
    expect(() => createRedisClient('redis+cluster://a:7000,b')).toThrow(ConfigError)
    expect(() => createRedisClient('redis+cluster://a:7000,b')).toThrow(/^invalid config: redisUrl: bad redis\+cluster URL/)
  })

  it('stops start-up at once with that ConfigError, before any backend is contacted', async () => {
    const config = loadConfig({
      overrides: { redisUrl: 'redis+cluster://10.255.255.1', databaseUrl: 'postgres://10.255.255.1/x', startupTimeoutSeconds: 60 },
    })
    const started = performance.now()
    await expect(openBackends(config, createLogger('silent'))).rejects.toThrow(ConfigError)
    expect(performance.now() - started).toBeLessThan(1000)
  })

  it('gives up at the start-up deadline on a cluster none of whose seeds answers, naming Redis and the URL without its password', async () => {
    const url = `redis+cluster://apiary:hunter2@127.0.0.1:${await freePort()},127.0.0.1:${await freePort()}`
    const config = loadConfig({ overrides: { redisUrl: url, databaseUrl: 'postgres://127.0.0.1:1/x' } })
    const error: unknown = await openBackends(config, createLogger('silent'), { deadlineMs: Date.now() + 800 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(BackendUnavailableError)
    expect((error as Error).message).toMatch(/^Redis at redis\+cluster:\/\/apiary:\*\*\*@127\.0\.0\.1:\d+,127\.0\.0\.1:\d+: /)
    expect((error as Error).message).not.toContain('hunter2')
  })
})
