// One uPlot line chart of a node's last 10 minutes. uPlot draws on a canvas and keeps its own DOM, so the
// component creates it once and only hands it new data.
import { html } from './html.js'
import { useEffect, useRef } from './vendor/hooks.mjs'
import uPlot from './vendor/uPlot.esm.js'

const WIDTH_PX = 250
const HEIGHT_PX = 120
const COLORS = ['#2563eb', '#d97706', '#059669']

/** `points`: NodeSample[]; `series`: [{label, value: (sample) => number}] */
export function Chart({ title, points, series }) {
  const box = useRef(null)
  const plot = useRef(null)
  const data = [points.map((p) => p.atMs / 1000), ...series.map((s) => points.map(s.value))]

  useEffect(() => {
    plot.current = new uPlot(
      {
        title,
        width: WIDTH_PX,
        height: HEIGHT_PX,
        legend: { show: series.length > 1, live: false },
        series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 1.5 }))],
        axes: [{ space: 60 }, { size: 50 }],
      },
      data,
      box.current,
    )
    return () => plot.current.destroy()
  }, [])

  useEffect(() => {
    plot.current?.setData(data)
  })

  return html`<figure class="chart" ref=${box} aria-label=${title}></figure>`
}
