// `npm run docs`: rewrites docs/configuration.md and the README's table of the most used settings from the schema,
// and docs/grafana-dashboard.json from its source in scripts/grafana-dashboard.ts.
import { readFileSync, writeFileSync } from 'node:fs'
import { configurationMarkdown, mostUsedSettingsMarkdown } from './config-doc.js'
import { grafanaDashboardJson } from './grafana-dashboard.js'

const START = '<!-- config-table:start -->'
const END = '<!-- config-table:end -->'

writeFileSync('docs/configuration.md', configurationMarkdown())
const readme = readFileSync('README.md', 'utf8')
const a = readme.indexOf(START)
const b = readme.indexOf(END)
if (a < 0 || b < 0) throw new Error('README.md has no config-table markers')
writeFileSync('README.md', `${readme.slice(0, a + START.length)}\n${mostUsedSettingsMarkdown()}\n${readme.slice(b)}`)
writeFileSync('docs/grafana-dashboard.json', grafanaDashboardJson())
