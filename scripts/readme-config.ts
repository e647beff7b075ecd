// Rewrites the config table in README.md from the schema: `npm run docs`.
import { readFileSync, writeFileSync } from 'node:fs'
import { configTableMarkdown } from '../src/infra/config-doc'

const START = '<!-- config-table:start -->'
const END = '<!-- config-table:end -->'
const readme = readFileSync('README.md', 'utf8')
const a = readme.indexOf(START)
const b = readme.indexOf(END)
if (a < 0 || b < 0) throw new Error('README.md has no config-table markers')
writeFileSync('README.md', `${readme.slice(0, a + START.length)}\n${configTableMarkdown()}\n${readme.slice(b)}`)
