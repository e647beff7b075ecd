// The console page's files as the relay serves them (docs/operating.md#the-console): ui/ under /console/assets/,
// the vendored libraries from node_modules, hooks.mjs pointed at preact.mjs instead of the bare "preact".
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const UI_DIR = fileURLToPath(new URL('../../src/infra/http/console/ui', import.meta.url))
const require = createRequire(import.meta.url)
/** each of these packages keeps its builds in the folder of its main file */
const dist = (pkg: string, file: string) => readFileSync(join(dirname(require.resolve(pkg)), file), 'utf8')

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
}

export interface Asset {
  type: string
  body: string
}

const typeOf = (name: string) => TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream'

function vendor(): Record<string, string> {
  return {
    'vendor/preact.mjs': dist('preact', 'preact.mjs'),
    'vendor/hooks.mjs': dist('preact', '../hooks/dist/hooks.mjs').replace(/from\s*"preact"/g, 'from"./preact.mjs"'),
    'vendor/htm.mjs': dist('htm', 'htm.mjs'),
    'vendor/uPlot.esm.js': dist('uplot', 'uPlot.esm.js'),
    'vendor/uPlot.min.css': dist('uplot', 'uPlot.min.css'),
  }
}

/** The page (`index.html`) and every asset by its name under /console/assets/, read once. */
export function loadConsoleAssets(): { page: Asset; assets: Map<string, Asset> } {
  const assets = new Map<string, Asset>()
  for (const name of readdirSync(UI_DIR)) {
    if (name !== 'index.html') assets.set(name, { type: typeOf(name), body: readFileSync(join(UI_DIR, name), 'utf8') })
  }
  for (const [name, body] of Object.entries(vendor())) assets.set(name, { type: typeOf(name), body })
  return { page: { type: TYPES['.html']!, body: readFileSync(join(UI_DIR, 'index.html'), 'utf8') }, assets }
}
