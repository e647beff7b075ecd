// `npm run docs`: rewrites what is generated from a source of record. docs/configuration.md and the README's table
// of the most used settings come from the config schema, docs/grafana-dashboard.json from
// scripts/grafana-dashboard.ts, and the README's performance table from docs/performance.md's Summary section.
import { readFileSync, writeFileSync } from 'node:fs'
import { configurationMarkdown, mostUsedSettingsMarkdown } from './config-doc.js'
import { grafanaDashboardJson } from './grafana-dashboard.js'
import { PERFORMANCE_SUMMARY_BLOCK, readmePerformanceSummary } from './performance-summary.js'
import { withMarkedBlock } from './readme-blocks.js'

writeFileSync('docs/configuration.md', configurationMarkdown())
let readme = readFileSync('README.md', 'utf8')
readme = withMarkedBlock(readme, 'config-table', mostUsedSettingsMarkdown())
readme = withMarkedBlock(readme, PERFORMANCE_SUMMARY_BLOCK, readmePerformanceSummary(readFileSync('docs/performance.md', 'utf8')))
writeFileSync('README.md', readme)
writeFileSync('docs/grafana-dashboard.json', grafanaDashboardJson())
