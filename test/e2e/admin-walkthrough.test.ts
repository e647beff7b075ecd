import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { APIARY_BIN, cleanEnv } from '../support/cli'
import { freePort } from '../support/redis-server'

/*
 * docs/administration.md's walkthrough, run as written by bash against the real bin: `npx apiary` becomes a
 * shell function that runs the bin and records each call (its line in the block, exit code, stdout, stderr),
 * port 7777 a free port, and the working and temporary directories a fresh folder. The outcomes the block's
 * comments promise are then checked against the records.
 */

interface Call {
  line: number
  code: number
  out: string
  err: string
}

const PRELUDE = `set -u
trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT
trap 'exit 143' TERM
apiary() {
  if [ "$1" = start ]; then exec "$NODE" "$BIN" "$@"; fi
  local n record code
  n=$(( $(cat "$CALLS/count" 2>/dev/null || echo 0) + 1 )); echo $n > "$CALLS/count"
  record="$CALLS/$(printf %03d $n)"; mkdir "$record"; echo "\${BASH_LINENO[0]}" > "$record/line"
  "$NODE" "$BIN" "$@" > "$record/out" 2> "$record/err"; code=$?
  echo $code > "$record/code"; cat "$record/out"; cat "$record/err" >&2
  return $code
}`

/** The ```sh block under the walkthrough's heading. */
function walkthroughBlock(): string[] {
  const doc = readFileSync('docs/administration.md', 'utf8')
  const from = doc.indexOf("## An admin's walkthrough")
  const start = doc.indexOf('```sh\n', from)
  const end = doc.indexOf('\n```', start + 6)
  if (from < 0 || start < 0 || end < 0) throw new Error("docs/administration.md has no sh block under ## An admin's walkthrough")
  return doc.slice(start + 6, end).split('\n')
}

function runBash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', [script], { cwd, env, timeout: 170_000, maxBuffer: 16 * 1024 * 1024 }, (error, _stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stderr })
    })
  })
}

function readCalls(dir: string, firstBlockLine: number): Call[] {
  const read = (n: string, f: string) => readFileSync(join(dir, n, f), 'utf8')
  return readdirSync(dir)
    .filter((n) => /^\d+$/.test(n))
    .sort()
    .map((n) => ({
      line: Number(read(n, 'line')) - firstBlockLine,
      code: Number(read(n, 'code')),
      out: read(n, 'out'),
      err: read(n, 'err'),
    }))
}

describe("the admin's walkthrough in docs/administration.md", { timeout: 180_000 }, () => {
  const block = walkthroughBlock()
  let dir: string
  let run: { code: number; stderr: string }
  let calls: Call[]
  /** the calls made by the one block line that matches `pattern` */
  const callsOf = (pattern: RegExp): Call[] => {
    const lines = block.flatMap((text, i) => (pattern.test(text) ? [i] : []))
    expect(lines, `block lines matching ${pattern}`).toHaveLength(1)
    return calls.filter((c) => c.line === lines[0])
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'apiary-walkthrough-'))
    for (const sub of ['tmp', 'calls']) mkdirSync(join(dir, sub))
    const port = String(await freePort())
    const body = block.join('\n').replaceAll('npx apiary', 'apiary').replaceAll('7777', port)
    writeFileSync(join(dir, 'walkthrough.sh'), `${PRELUDE}\n${body}\nwait %1\n`)
    const env = cleanEnv({ NODE: process.execPath, BIN: APIARY_BIN, CALLS: join(dir, 'calls'), TMPDIR: join(dir, 'tmp') })
    run = await runBash('walkthrough.sh', dir, env)
    calls = readCalls(join(dir, 'calls'), PRELUDE.split('\n').length + 1)
  }, 180_000)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('runs to the end, and the relay it started closes gracefully (exit 0)', () => {
    expect(run, run.stderr).toMatchObject({ code: 0 })
  })

  it('runs every apiary command of the block, and each but the refused ones exits 0', () => {
    const refused = [/channel join general .*\$\(sec eve\)/, /channel list .*\$\(sec eve\)/, /channel list --url \$WS +# cannot connect/]
    block.forEach((text, i) => {
      if (!/npx apiary (?!start)/.test(text)) return
      const mine = calls.filter((c) => c.line === i)
      expect(mine.length, `calls made by: ${text}`).toBeGreaterThan(0)
      if (!refused.some((r) => r.test(text))) for (const c of mine) expect(c, text).toMatchObject({ code: 0, err: '' })
    })
    expect(callsOf(/npx apiary keygen/)).toHaveLength(5)
  })

  it('refuses Eve: "restricted:" while only members write, "blocked:" in her timeout, HTTP 403 once the IP is blocked', () => {
    expect(callsOf(/channel join general .*\$\(sec eve\)/)).toMatchObject([{ code: 1, err: expect.stringMatching(/restricted: /) }])
    expect(callsOf(/channel list .*\$\(sec eve\)/)).toMatchObject([{ code: 1, err: expect.stringMatching(/blocked: cool off/) }])
    expect(callsOf(/channel list --url \$WS +# cannot connect/)).toMatchObject([{ code: 1, err: expect.stringMatching(/HTTP 403/) }])
  })

  it('prints what the comments say: event ids, the channel list, the attestation and the ban list', () => {
    const keys = callsOf(/npx apiary keygen/).map((c) => /^pubkey ([0-9a-f]{64})$/m.exec(c.out)?.[1])
    const [bob, eve] = [keys[2], keys[4]]
    expect(callsOf(/channel create general/)).toMatchObject([{ out: expect.stringMatching(/^ok [0-9a-f]{64}\n$/) }])
    expect(callsOf(/^ID=\$\(npx apiary channel join general/)).toMatchObject([{ out: expect.stringMatching(/^ok [0-9a-f]{64}\n$/) }])
    expect(callsOf(/channel list --url \$WS +# board/)[0]?.out.split('\n')).toContain('board\tBoard room\tprivate closed')
    const [tag, owner, conditions] = JSON.parse(callsOf(/agent attest/)[0]?.out ?? '[]') as string[]
    expect([tag, owner, conditions]).toEqual(['auth', bob, expect.stringMatching(/^created_at<\d+$/)])
    const banned = JSON.parse(callsOf(/listbannedpubkeys/)[0]?.out ?? '') as { pubkey: string; reason?: string }[]
    expect(banned).toContainEqual(expect.objectContaining({ pubkey: eve, reason: 'spam' }))
  })
})
