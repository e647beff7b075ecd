import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { grafanaDashboardJson } from '../../scripts/grafana-dashboard'
import { DATASOURCE, ON_INSTANCES } from '../../scripts/grafana-panels'
import { createMetrics } from '../../src/infra/metrics'

/*
 * docs/grafana-dashboard.json imports into Grafana as one dashboard whose every query reads the chosen data
 * source and nodes, and names only metrics the relay registers: a renamed metric fails here, not as a blank panel.
 */

type Target = { expr: string; datasource: { uid: string } }
type Panel = { id: number; type: string; title: string; datasource?: { type: string; uid: string }; targets?: Target[] }
type Variable = { name: string; type: string; query: string | { query: string } }
type Dashboard = { uid: string; schemaVersion: number; panels: Panel[]; templating: { list: Variable[] } }

const HISTOGRAM_SERIES = /_(bucket|sum|count)$/

/** The registered metrics (apiary_ and prom-client's process_/nodejs_ defaults), each with its type. */
function registeredTypes(): Map<string, string> {
  const metrics = createMetrics().registry.getMetricsAsArray() as unknown as { name: string; type: string }[]
  return new Map(metrics.map((m) => [m.name, m.type]))
}

/** The names in PromQL expressions that the relay registers under none of its names or histogram series. */
function unknownMetrics(exprs: string[], registered: Map<string, string>): string[] {
  const names = exprs.flatMap((e) => [...e.matchAll(/\b(?:apiary|process|nodejs)_[a-z0-9_]+/g)].map((m) => m[0]))
  const known = (name: string) => {
    if (registered.has(name)) return true
    const series = name.replace(HISTOGRAM_SERIES, '')
    return series !== name && registered.get(series) === 'histogram'
  }
  return [...new Set(names)].filter((n) => !known(n))
}

describe('the Grafana dashboard in docs/', () => {
  const text = readFileSync('docs/grafana-dashboard.json', 'utf8')
  const dashboard = JSON.parse(text) as Dashboard
  const panels = dashboard.panels.filter((p) => p.type !== 'row')
  const targets = panels.flatMap((p) => p.targets ?? [])

  it('is what scripts/grafana-dashboard.ts writes (run `npm run docs` after changing it)', () => {
    expect(text).toBe(grafanaDashboardJson())
  })

  it('imports as uid apiary-relay with a Prometheus data source picker and a node picker', () => {
    expect(dashboard.uid).toBe('apiary-relay')
    expect(dashboard.schemaVersion).toBe(39)
    const [datasource, instance] = dashboard.templating.list
    expect(datasource).toMatchObject({ name: 'datasource', type: 'datasource', query: 'prometheus' })
    expect(instance).toMatchObject({
      name: 'instance',
      type: 'query',
      query: { query: 'label_values(apiary_connections_active, instance)' },
    })
  })

  it('has the console rows in order, each with panels', () => {
    const rows = dashboard.panels.flatMap((p, i) => (p.type === 'row' ? [{ title: p.title, i }] : []))
    expect(rows.map((r) => r.title)).toEqual(['Overview', 'Agents', 'Refusals and abuse', 'Mesh', 'Console'])
    const sizes = rows.map((r, k) => (rows[k + 1]?.i ?? dashboard.panels.length) - r.i - 1)
    expect(sizes.filter((n) => n === 0)).toEqual([])
  })

  it('gives every panel a unique id, and every panel and query the data source variable', () => {
    const ids = dashboard.panels.map((p) => p.id)
    expect(new Set(ids).size).toBe(ids.length)
    expect(panels.length).toBeGreaterThan(40)
    expect(panels.filter((p) => p.datasource?.uid !== DATASOURCE.uid).map((p) => p.title)).toEqual([])
    expect(panels.filter((p) => (p.targets ?? []).length === 0).map((p) => p.title)).toEqual([])
    expect(targets.filter((t) => t.datasource.uid !== DATASOURCE.uid).map((t) => t.expr)).toEqual([])
  })

  it('reads only the nodes chosen in the instance variable', () => {
    expect(targets.filter((t) => !t.expr.includes(ON_INSTANCES)).map((t) => t.expr)).toEqual([])
  })

  it('names only metrics the relay registers, histogram series included', () => {
    const instance = dashboard.templating.list.find((v) => v.name === 'instance')!
    const exprs = [...targets.map((t) => t.expr), typeof instance.query === 'string' ? instance.query : instance.query.query]
    const registered = registeredTypes()
    expect(unknownMetrics(exprs, registered)).toEqual([])
    expect(exprs.join('\n')).toContain('apiary_store_seconds_bucket')
  })

  it('would catch a renamed metric, and a histogram suffix on a counter', () => {
    const registered = registeredTypes()
    expect(unknownMetrics(['sum(rate(apiary_events_acepted_total[5m]))'], registered)).toEqual(['apiary_events_acepted_total'])
    expect(unknownMetrics(['apiary_notices_total_count', 'apiary_store_seconds_count'], registered)).toEqual(['apiary_notices_total_count'])
  })
})
