import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createBanLookup } from '../../../src/infra/store/ban-lookup'
import type { CommunityStore } from '../../../src/infra/store/community-store'
import { openSqliteCommunityStore } from '../../../src/infra/store/sqlite-community-store'

describe('the per-write ban lookup', () => {
  let dir = ''
  let store: CommunityStore | undefined
  afterEach(async () => {
    await store?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('shares one store query among concurrent lookups, and never answers from a stale result', async () => {
    dir = mkdtempSync(join(tmpdir(), 'apiary-ban-'))
    const real = openSqliteCommunityStore(join(dir, 'c.sqlite'))
    store = real
    let queries = 0
    const counting: CommunityStore = {
      ...real,
      isBanned: (...args) => {
        queries++
        return real.isBanned(...args)
      },
    }
    const banOf = createBanLookup(counting, () => 1_700_000_000)
    const pubkey = 'a'.repeat(64)
    expect(await Promise.all(Array.from({ length: 20 }, () => banOf('c', pubkey)))).toEqual(Array(20).fill(undefined))
    expect(queries).toBe(1)
    await real.banPubkey('c', pubkey, 'spam')
    // the row written after the last lookup settled is seen by the very next one
    expect(await banOf('c', pubkey)).toEqual({ reason: 'spam' })
    expect(queries).toBe(2)
  })
})
