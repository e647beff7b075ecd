import { z } from 'zod'
import { configSchema, listSettings } from './config.js'

type JsonSchemaNode = { description?: string; properties?: Record<string, JsonSchemaNode> }

/** The README's config table, generated from the schema (env name, default, meaning). */
export function configTableMarkdown(): string {
  const root = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode
  const describe = (path: string[]) => {
    let node: JsonSchemaNode | undefined = root
    for (const p of path) node = node?.properties?.[p]
    return node?.description ?? ''
  }
  const rows = listSettings().map((s) => {
    const def = JSON.stringify(s.defaultValue)
    return `| \`${s.env}\` | \`${s.path.join('.')}\` | \`${s.path[0] === 'verifyThreads' ? 'cores, at most 4' : def}\` | ${describe(s.path)} |`
  })
  return ['| env | config key | default | meaning |', '|---|---|---|---|', ...rows].join('\n')
}
