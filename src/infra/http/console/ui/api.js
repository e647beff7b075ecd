// The console's calls to its own relay (same origin, the session cookie goes with each). A refusal keeps the
// relay's reason with its prefix (`restricted: ...`), so the operator sees who can fix it.

export class ApiError extends Error {
  constructor(message, status) {
    super(message)
    this.status = status
  }
}

async function reasonOf(res) {
  const text = await res.text()
  try {
    const body = JSON.parse(text)
    if (typeof body.error === 'string') return body.error
  } catch {}
  return text.trim() || `error: HTTP ${res.status}`
}

async function call(method, path, body, headers = {}) {
  const init = { method, credentials: 'same-origin', headers: { ...headers } }
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json'
    init.body = JSON.stringify(body)
  }
  const res = await fetch(path, init)
  if (!res.ok) throw new ApiError(await reasonOf(res), res.status)
  return res.status === 204 ? null : res.json()
}

export const getMe = () => call('GET', '/console/api/me')
export const postChallenge = () => call('POST', '/console/api/challenge', {})
export const postSession = (body) => call('POST', '/console/api/session', body)
export const deleteSession = (csrf) => call('DELETE', '/console/api/session', undefined, { 'X-Apiary-CSRF': csrf })

/** A NIP-86 call through the console; resolves with the NIP-86 response ({result} or {result: null, error}). */
export const moderate = (csrf, community, method, params) =>
  call('POST', '/console/api/moderate', { community, method, params }, { 'X-Apiary-CSRF': csrf })
