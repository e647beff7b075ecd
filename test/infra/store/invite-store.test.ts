import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CommunityStore } from '../../../src/infra/store/community-store'
import { type InviteStore, newInviteCode } from '../../../src/infra/store/invite-store'
import { openPostgresCommunityStore } from '../../../src/infra/store/postgres/postgres-community-store'
import { openPostgresInviteStore } from '../../../src/infra/store/postgres/postgres-invite-store'
import { openSqliteCommunityStore } from '../../../src/infra/store/sqlite/sqlite-community-store'
import { openSqliteInviteStore } from '../../../src/infra/store/sqlite/sqlite-invite-store'
import { createTestDatabase, type TestDatabase } from '../../support/postgres'

const dir = mkdtempSync(join(tmpdir(), 'apiary-invites-'))
let db: TestDatabase
beforeAll(async () => {
  db = await createTestDatabase()
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
  await db?.drop()
})

const NOW = 1_700_000_000
const pubkey = () => randomBytes(32).toString('hex')

/** The stores two nodes of one backend open: the community store first (it owns the allowed list). */
interface Opened {
  communities: CommunityStore
  invites: InviteStore
  /** a second invite store on the same database, as another node opens it */
  other: InviteStore
}

describeInviteStore('SQLite', async () => {
  const file = join(dir, 'apiary.sqlite')
  const communities = openSqliteCommunityStore(file)
  return { communities, invites: openSqliteInviteStore(file), other: openSqliteInviteStore(file) }
})
describeInviteStore('PostgreSQL', async () => {
  const communities = await openPostgresCommunityStore({ url: db.url })
  return { communities, invites: await openPostgresInviteStore({ url: db.url }), other: await openPostgresInviteStore({ url: db.url }) }
})

function describeInviteStore(backend: string, open: () => Promise<Opened>) {
  describe(`NIP-43 invite codes (${backend})`, () => {
    let s: Opened
    const admin = pubkey()
    beforeAll(async () => {
      s = await open()
    })
    afterAll(async () => {
      await s?.invites.close()
      await s?.other.close()
      await s?.communities.close()
    })
    // each test its own community: the stores are shared by the suite
    const fresh = () => `c-${randomBytes(4).toString('hex')}`
    const make = (c: string, opts: { uses?: number; expiresAtSeconds?: number; createdBy?: string } = {}, maxOpen?: number) => {
      const code = newInviteCode()
      const invite = { code, createdBy: opts.createdBy ?? admin, expiresAtSeconds: opts.expiresAtSeconds ?? NOW + 60, uses: opts.uses ?? 1 }
      return s.invites.create(c, invite, NOW, maxOpen).then((created) => ({ code, created }))
    }

    it('admits the first holder of a code onto the allowed list, naming who invited them; a second holder hears "used"', async () => {
      const c = fresh()
      const { code } = await make(c)
      const [a, b] = [pubkey(), pubkey()]
      expect(await s.invites.redeem(c, code, a, NOW)).toBe('admitted')
      expect(await s.communities.listAllowedPubkeys(c)).toEqual([{ value: a, reason: `joined with an invite from ${admin}` }])
      expect(await s.invites.redeem(c, code, b, NOW)).toBe('used')
      expect((await s.communities.allowedAmong(c, [b])).size).toBe(0)
    })

    it('answers "member" to a listed pubkey without taking a use', async () => {
      const c = fresh()
      const { code } = await make(c)
      const listed = pubkey()
      await s.communities.allowPubkey(c, listed, 'by hand')
      expect(await s.invites.redeem(c, code, listed, NOW)).toBe('member')
      expect(await s.invites.redeem(c, code, pubkey(), NOW)).toBe('admitted')
    })

    it('answers "unknown" to a code it never made or made for another community, "expired" from its end on', async () => {
      const c = fresh()
      const { code } = await make(c, { expiresAtSeconds: NOW + 10 })
      expect(await s.invites.redeem(c, 'nope', pubkey(), NOW)).toBe('unknown')
      expect(await s.invites.redeem(`${c}-other`, code, pubkey(), NOW)).toBe('unknown')
      expect(await s.invites.redeem(c, code, pubkey(), NOW + 10)).toBe('expired')
      expect(await s.invites.redeem(c, code, pubkey(), NOW + 9)).toBe('admitted')
    })

    it('gives a code of n uses to n holders', async () => {
      const c = fresh()
      const { code } = await make(c, { uses: 3 })
      const answers = []
      for (let i = 0; i < 4; i++) answers.push(await s.invites.redeem(c, code, pubkey(), NOW))
      expect(answers).toEqual(['admitted', 'admitted', 'admitted', 'used'])
    })

    it('admits one of many holders redeeming a single-use code at once on two nodes', async () => {
      const c = fresh()
      const { code } = await make(c)
      const tries = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? s.invites : s.other).redeem(c, code, pubkey(), NOW))
      const answers = await Promise.all(tries)
      expect(answers.filter((a) => a === 'admitted')).toHaveLength(1)
      expect(answers.filter((a) => a === 'used')).toHaveLength(9)
      expect(await s.communities.listAllowedPubkeys(c)).toHaveLength(1)
    })

    it('refuses a creator’s code past maxOpen unused ones, and counts neither used nor expired ones', async () => {
      const c = fresh()
      const maker = pubkey()
      const first = await make(c, { createdBy: maker }, 2)
      expect(first.created).toBe(true)
      expect((await make(c, { createdBy: maker }, 2)).created).toBe(true)
      expect((await make(c, { createdBy: maker }, 2)).created).toBe(false)
      // another creator has slots of their own
      expect((await make(c, {}, 2)).created).toBe(true)
      expect(await s.invites.redeem(c, first.code, pubkey(), NOW)).toBe('admitted')
      expect((await make(c, { createdBy: maker }, 2)).created).toBe(true)
      // without a bound (NIP-86 createinvite) nothing is refused
      expect((await make(c, { createdBy: maker })).created).toBe(true)
    })

    it('drops a community’s expired codes when a new one is made: they are "unknown" from then on', async () => {
      const c = fresh()
      const { code } = await make(c, { expiresAtSeconds: NOW - 1 })
      expect(await s.invites.redeem(c, code, pubkey(), NOW)).toBe('expired')
      await make(c)
      expect(await s.invites.redeem(c, code, pubkey(), NOW)).toBe('unknown')
    })
  })
}
