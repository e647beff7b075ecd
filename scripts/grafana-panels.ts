/**
 * The pieces of a Grafana dashboard (schema 39) that docs/grafana-dashboard.json is built from: panels that all
 * read the `datasource` variable and filter on the `instance` variable, laid out row by row on Grafana's
 * 24-column grid, so the dashboard's source stays a list of questions and queries rather than grid arithmetic.
 */

/** Every query of the dashboard reads through the data source the importer picks. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, filled in by Grafana
export const DATASOURCE = { type: 'prometheus', uid: '${datasource}' } as const

/** The label matcher every query carries: the nodes chosen in the `instance` variable. */
export const ON_INSTANCES = 'instance=~"$instance"'

const INSTANCES_QUERY = 'label_values(apiary_connections_active, instance)'

/** The `datasource` picker (any Prometheus) and the `instance` picker (the nodes that data source scrapes). */
export function templateVariables() {
  const datasource = {
    name: 'datasource',
    label: 'Data source',
    type: 'datasource',
    query: 'prometheus',
    current: {},
    hide: 0,
    refresh: 1,
    options: [],
  }
  const instance = {
    name: 'instance',
    label: 'Node',
    type: 'query',
    datasource: DATASOURCE,
    definition: INSTANCES_QUERY,
    query: { query: INSTANCES_QUERY, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
    includeAll: true,
    multi: true,
    // a regex for All rather than every instance spelled out in each query
    allValue: '.*',
    current: {},
    hide: 0,
    // on time range change, so a node that joined shows up
    refresh: 2,
    sort: 1,
    options: [],
  }
  return [datasource, instance]
}

export type Query = { expr: string; legend: string }

/** What one panel shows, before it has an id and a place. */
export type PanelSpec = {
  title: string
  description: string
  kind: 'timeseries' | 'stat'
  unit: string
  queries: Query[]
  /** columns of 24 */
  width: number
  stacked?: boolean
  /** for a ratio: the axis from 0 to 1 */
  max?: number
  /** a stat turns red at this value */
  redAt?: number
}

export type RowSpec = { title: string; panels: PanelSpec[] }

const GRID_COLUMNS = 24
const HEIGHT = { timeseries: 8, stat: 4 }

export const query = (expr: string, legend = ''): Query => ({ expr, legend })

/** `rate()` of a counter over the panel's step, on the chosen instances, summed by `by`. */
export function rateBy(metric: string, by: string[], extra = ''): string {
  const matchers = extra === '' ? ON_INSTANCES : `${ON_INSTANCES}, ${extra}`
  const sum = by.length === 0 ? 'sum' : `sum by (${by.join(', ')}) `
  return `${sum}(rate(${metric}{${matchers}}[$__rate_interval]))`
}

/** A quantile of a histogram's observations over the panel's step, across the chosen instances. */
export function quantile(q: number, histogram: string, by: string[] = []): string {
  const labels = ['le', ...by].join(', ')
  return `histogram_quantile(${q}, sum by (${labels}) (rate(${histogram}_bucket{${ON_INSTANCES}}[$__rate_interval])))`
}

export const timeseries = (
  title: string,
  description: string,
  unit: string,
  queries: Query[],
  more: Partial<PanelSpec> = {},
): PanelSpec => ({
  title,
  description,
  kind: 'timeseries',
  unit,
  queries,
  width: 8,
  ...more,
})

/** one number, the last of its query; several when `legend` splits it by a label */
export function stat(
  title: string,
  description: string,
  unit: string,
  expr: string,
  more: Partial<PanelSpec> & { legend?: string } = {},
): PanelSpec {
  const { legend = '', ...rest } = more
  return { title, description, kind: 'stat', unit, queries: [query(expr, legend)], width: 6, ...rest }
}

function fieldConfig(spec: PanelSpec) {
  const steps: { color: string; value: number | null }[] = [{ color: 'green', value: null }]
  if (spec.redAt !== undefined) steps.push({ color: 'red', value: spec.redAt })
  const custom =
    spec.kind === 'timeseries'
      ? { custom: { fillOpacity: spec.stacked ? 40 : 10, stacking: { mode: spec.stacked ? 'normal' : 'none' } } }
      : {}
  return {
    defaults: {
      unit: spec.unit,
      min: 0,
      ...(spec.max === undefined ? {} : { max: spec.max }),
      thresholds: { mode: 'absolute', steps },
      ...custom,
    },
    overrides: [],
  }
}

function options(spec: PanelSpec) {
  if (spec.kind === 'stat')
    return { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, colorMode: 'value', graphMode: 'area' }
  return { legend: { calcs: [], displayMode: 'list', placement: 'bottom', showLegend: true }, tooltip: { mode: 'multi', sort: 'desc' } }
}

function toPanel(spec: PanelSpec, id: number, gridPos: { h: number; w: number; x: number; y: number }) {
  return {
    id,
    type: spec.kind,
    title: spec.title,
    description: spec.description,
    datasource: DATASOURCE,
    gridPos,
    fieldConfig: fieldConfig(spec),
    options: options(spec),
    targets: spec.queries.map((q, i) => ({
      datasource: DATASOURCE,
      expr: q.expr,
      legendFormat: q.legend,
      range: true,
      refId: String.fromCharCode(65 + i),
    })),
  }
}

/** Rows in order, each a row panel followed by its panels flowed left to right, ids counted from 1. */
export function layOut(rows: RowSpec[]): object[] {
  const panels: object[] = []
  let y = 0
  for (const row of rows) {
    panels.push({
      id: panels.length + 1,
      type: 'row',
      title: row.title,
      collapsed: false,
      gridPos: { h: 1, w: GRID_COLUMNS, x: 0, y },
      panels: [],
    })
    y += 1
    let x = 0
    let lineHeight = 0
    for (const spec of row.panels) {
      const h = HEIGHT[spec.kind]
      if (x + spec.width > GRID_COLUMNS) {
        y += lineHeight
        x = 0
        lineHeight = 0
      }
      panels.push(toPanel(spec, panels.length + 1, { h, w: spec.width, x, y }))
      x += spec.width
      lineHeight = Math.max(lineHeight, h)
    }
    y += lineHeight
  }
  return panels
}
