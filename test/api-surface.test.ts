// The public surface of both entry points, read from the built declarations (dist/, which
// test/support/build.ts builds for the run), against the reviewed test/api-surface.snapshot.txt: changing
// what a host can import is a visible diff in review, never a side effect. After a change you mean to make:
//   UPDATE_API_SNAPSHOT=1 npx vitest run test/api-surface.test.ts
// rewrites the snapshot (never in CI); commit it with the change, and document new names in docs/embedding.md.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { beforeAll, describe, expect, it } from 'vitest'
import { type EntryPoint, readSurface, type Surface } from './support/api-surface'

const ENTRY_POINTS: EntryPoint[] = [
  { specifier: 'apiary-relay', declarations: 'dist/index.d.ts' },
  { specifier: 'apiary-relay/client', declarations: 'dist/client/index.d.ts' },
]
const SNAPSHOT = 'test/api-surface.snapshot.txt'
const HEADER = [
  '# The exported names of apiary-relay and apiary-relay/client, from the built .d.ts (test/api-surface.test.ts).',
  '# One line per export, and per member of an exported interface or class. Regenerate after a change you mean:',
  '#   UPDATE_API_SNAPSHOT=1 npx vitest run test/api-surface.test.ts',
]

describe('the public API', () => {
  let surface: Surface
  beforeAll(() => {
    surface = readSurface(ENTRY_POINTS)
  })

  it('matches the reviewed snapshot of both entry points (UPDATE_API_SNAPSHOT=1 rewrites it)', () => {
    const current = `${[...HEADER, ...surface.lines].join('\n')}\n`
    if (process.env.UPDATE_API_SNAPSHOT === '1') {
      if (process.env.CI) throw new Error('UPDATE_API_SNAPSHOT is refused in CI: the snapshot is written and reviewed locally')
      writeFileSync(SNAPSHOT, current)
    }
    const reviewed = existsSync(SNAPSHOT) ? readFileSync(SNAPSHOT, 'utf8') : ''
    expect(
      current,
      `the public API changed: if you meant it, run UPDATE_API_SNAPSHOT=1 npx vitest run test/api-surface.test.ts, review ${SNAPSHOT} and commit it`,
    ).toBe(reviewed)
  })

  it('documents every exported name of both entry points in docs/embedding.md', () => {
    const doc = readFileSync('docs/embedding.md', 'utf8')
    const missing = [...surface.names].flatMap(([entry, names]) =>
      names.filter((name) => !new RegExp('`' + name + '[`(<.\\s]').test(doc)).map((name) => `${entry}: ${name}`),
    )
    expect(missing, 'exported but not mentioned (as `Name`) in docs/embedding.md').toEqual([])
  })

  it("keeps zod out of the declarations a host compiles: no file the entry points reach imports 'zod'", () => {
    expect(surface.loadedFiles.filter((f) => /[\\/]node_modules[\\/]zod[\\/]/.test(f))).toEqual([])
    expect(surface.loadedFiles.some((f) => f.endsWith('/dist/relay/relay.d.ts'))).toBe(true)
  })
})
