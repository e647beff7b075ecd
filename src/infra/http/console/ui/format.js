// How numbers, times and keys read on the page.

/** a node id (a UUID) by its first 8 characters: enough to tell a cluster's nodes apart in a table */
export const shortNode = (id) => (id && id.length > 12 ? id.slice(0, 8) : id || '')

export const shortKey = (hex) => (hex && hex.length > 16 ? `${hex.slice(0, 8)}…${hex.slice(-4)}` : hex || '')

export function duration(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return '–'
  const sign = ms < 0 ? '-' : ''
  const s = Math.abs(ms) / 1000
  if (s < 60) return `${sign}${s.toFixed(s < 10 ? 1 : 0)} s`
  if (s < 3600) return `${sign}${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`
  if (s < 86_400) return `${sign}${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
  return `${sign}${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`
}

export function bytes(n) {
  if (n === undefined || n === null) return '–'
  const units = ['B', 'KiB', 'MiB', 'GiB']
  let v = n
  let i = 0
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`
}

export const rate = (n) => (n === undefined || n === null ? '–' : n >= 100 ? n.toFixed(0) : n.toFixed(1))

export const clock = (ms) => (ms ? new Date(ms).toLocaleTimeString() : '–')

/** `{a: 1, b: 2}` as "a 1 · b 2", nonzero entries only */
export function pairs(record, fmt = rate) {
  const entries = Object.entries(record || {}).filter(([, v]) => v)
  return entries.length === 0 ? '–' : entries.map(([k, v]) => `${k} ${fmt(v)}`).join(' · ')
}

/** sums records key by key (the same community's figures from several nodes) */
export function addInto(target, record) {
  for (const [k, v] of Object.entries(record || {})) target[k] = (target[k] || 0) + v
  return target
}
