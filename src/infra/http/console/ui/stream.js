// The live stream: one EventSource per (view, filters, page), reopened when they change. The relay sends the
// charts' 10 minutes and the supervision rows in full on a stream's first snapshot and only what is new after,
// so this hook keeps them: samples trimmed to 10 minutes, supervision capped at 1,000 rows.
import { getMe } from './api.js'
import { useEffect, useRef, useState } from './vendor/hooks.mjs'

const SAMPLE_WINDOW_MS = 10 * 60 * 1000
export const SUPERVISION_CAP = 1000

function mergeSamples(kept, incoming, first) {
  const out = first ? {} : { ...kept }
  for (const [node, points] of Object.entries(incoming || {})) {
    const merged = first ? points : (out[node] || []).concat(points)
    const newest = merged.length ? merged[merged.length - 1].atMs : 0
    out[node] = merged.filter((p) => p.atMs >= newest - SAMPLE_WINDOW_MS)
  }
  return out
}

function mergeSupervision(kept, incoming) {
  if (!incoming || incoming.length === 0) return kept
  const seen = new Set(kept.map((r) => `${r.node}/${r.seq}`))
  const fresh = incoming.filter((r) => !seen.has(`${r.node}/${r.seq}`)).reverse()
  return fresh.concat(kept).slice(0, SUPERVISION_CAP)
}

/** `query`: the stream's parameters (view, state, capability, offset, limit, ranking); undefined ones are left out */
export function useStream(query, onExpired) {
  const [snapshot, setSnapshot] = useState(null)
  const [samples, setSamples] = useState({})
  const [supervision, setSupervision] = useState([])
  const [status, setStatus] = useState('connecting')
  const [attempt, setAttempt] = useState(0)
  const expired = useRef(onExpired)
  expired.current = onExpired
  const params = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== '')).toString()

  useEffect(() => {
    const source = new EventSource(`/console/api/stream?${params}`)
    // every (re)connection starts with a full snapshot: the charts and the supervision list start over
    let first = true
    source.onopen = () => {
      first = true
    }
    source.addEventListener('snapshot', (e) => {
      const snap = JSON.parse(e.data)
      if (snap.samples) setSamples((kept) => mergeSamples(kept, snap.samples, first))
      if (snap.supervision) setSupervision((kept) => mergeSupervision(first ? [] : kept, snap.supervision))
      first = false
      setSnapshot(snap)
      setStatus('live')
    })
    source.addEventListener('expired', () => {
      source.close()
      expired.current()
    })
    // EventSource retries a dropped stream by itself; a refused one (401, 429) it closes for good: ask /me
    // whether the session is gone, else open again a little later
    let retry
    source.onerror = () => {
      setStatus('reconnecting')
      if (source.readyState !== EventSource.CLOSED) return
      const again = () => {
        retry = setTimeout(() => setAttempt((n) => n + 1), 2000)
      }
      getMe().then(again, (e) => (e.status === 401 ? expired.current() : again()))
    }
    return () => {
      clearTimeout(retry)
      source.close()
    }
  }, [params, attempt])

  return { snapshot, samples, supervision, status }
}
