import { randomBytes } from 'node:crypto'
import postgres from 'postgres'

/** The test server (trust auth); its `postgres` database is only used to create and drop test databases. */
const ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

export interface TestDatabase {
  url: string
  drop(): Promise<void>
}

/**
 * A private database per test file: files run in parallel and tests never see each other's rows or triggers.
 * `drop()` only ever drops the database this call created.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `apiary_test_${randomBytes(6).toString('hex')}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const sql = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
      try {
        // WITH (FORCE): a store a failed test never closed must not keep the database alive
        await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await sql.end()
      }
    },
  }
}
