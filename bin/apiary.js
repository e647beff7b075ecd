#!/usr/bin/env node
// The `apiary` command: the compiled CLI, in this process (signals reach the relay directly).
import { existsSync } from 'node:fs'

const main = new URL('../dist/cli/main.js', import.meta.url)
if (!existsSync(main)) {
  process.stderr.write('apiary: dist/ is missing; build it with `npm run build` (npm ci and npm pack run it)\n')
  process.exit(1)
}
await import(main.href)
