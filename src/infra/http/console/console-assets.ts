// The console's files, read once at start: the page and its scripts and styles from ui/ (shipped in the
// package beside this module), and the front-end libraries from node_modules. A request names a file of this
// table or gets 404: no path from a URL ever reaches the file system.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface ConsoleAsset {
  type: string
  body: Buffer
}

export interface ConsoleAssets {
  page: ConsoleAsset
  /** by the name after `/console/assets/` (`app.js`, `vendor/preact.mjs`) */
  files: ReadonlyMap<string, ConsoleAsset>
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
}

export const CONSOLE_UI_DIR = fileURLToPath(new URL('./ui/', import.meta.url))

/** The page, every ui/ file of a served type (index.html aside), and the vendor modules. Throws when ui/ is missing. */
export function loadConsoleAssets(uiDir: string = CONSOLE_UI_DIR): ConsoleAssets {
  const files = new Map<string, ConsoleAsset>()
  for (const name of readdirSync(uiDir)) {
    const type = TYPES[extname(name)]
    if (type === undefined || name === 'index.html' || !statSync(join(uiDir, name)).isFile()) continue
    files.set(name, { type, body: readFileSync(join(uiDir, name)) })
  }
  for (const [name, asset] of vendorAssets()) files.set(`vendor/${name}`, asset)
  return { page: { type: TYPES['.html'] as string, body: readFileSync(join(uiDir, 'index.html')) }, files }
}

/**
 * preact, its hooks, htm and uPlot as the page imports them: ES modules by relative URL. The hooks module
 * imports the bare specifier "preact", which a browser without an import map can't resolve; it is pointed at
 * the served preact.mjs here, as it is loaded, so node_modules is never changed.
 */
function vendorAssets(): [string, ConsoleAsset][] {
  const require = createRequire(import.meta.url)
  const js = TYPES['.js'] as string
  const read = (file: string) => readFileSync(file)
  // the packages' exports name their ESM builds for `import` only; their files sit beside what `require` resolves
  const preact = join(dirname(require.resolve('preact')), 'preact.mjs')
  const hooks = join(dirname(require.resolve('preact/hooks')), 'hooks.mjs')
  const htm = join(dirname(require.resolve('htm')), 'htm.mjs')
  const hooksSource = read(hooks)
    .toString('utf8')
    .replace(/from\s*["']preact["']/g, 'from"./preact.mjs"')
  return [
    ['preact.mjs', { type: js, body: read(preact) }],
    ['hooks.mjs', { type: js, body: Buffer.from(hooksSource, 'utf8') }],
    ['htm.mjs', { type: js, body: read(htm) }],
    ['uPlot.esm.js', { type: js, body: read(require.resolve('uplot/dist/uPlot.esm.js')) }],
    ['uPlot.min.css', { type: TYPES['.css'] as string, body: read(require.resolve('uplot/dist/uPlot.min.css')) }],
  ]
}
