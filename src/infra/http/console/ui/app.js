// The console's shell: sign-in until /console/api/me answers, then the tabs over one live stream whose
// parameters follow the open view, its filters and its page.
import { AGENTS_PAGE_SIZE, Agents } from './agents.js'
import { deleteSession, getMe } from './api.js'
import { Communities } from './communities.js'
import { clock } from './format.js'
import { Hot } from './hot.js'
import { html } from './html.js'
import { Mesh } from './mesh.js'
import { Moderation } from './moderation.js'
import { Overview } from './overview.js'
import { SignIn, takeLoginToken } from './sign-in.js'
import { useStream } from './stream.js'
import { Supervision } from './supervision.js'
import { useEffect, useState } from './vendor/hooks.mjs'
import { render } from './vendor/preact.mjs'

const TABS = [
  ['overview', 'Overview'],
  ['communities', 'Communities'],
  ['agents', 'Agents'],
  ['hot', 'Hot connections'],
  ['supervision', 'Supervision'],
  ['mesh', 'Mesh'],
  ['moderation', 'Moderation'],
]

// an admin's snapshot carries no mesh: the mesh spans every community
const tabsOf = (role) => (role === 'operator' ? TABS : TABS.filter(([id]) => id !== 'mesh'))

function Tabs({ tabs, view, setView }) {
  const keys = (e) => {
    const i = tabs.findIndex(([id]) => id === view)
    const step = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0
    if (!step) return
    const next = tabs[(i + step + tabs.length) % tabs.length][0]
    setView(next)
    document.querySelector(`[data-testid="tab-${next}"]`)?.focus()
  }
  return html`<nav role="tablist" aria-label="views" onKeyDown=${keys}>
    ${tabs.map(
      ([id, label]) => html`<button type="button" role="tab" key=${id} data-testid=${`tab-${id}`} aria-selected=${view === id}
        tabindex=${view === id ? 0 : -1} onClick=${() => setView(id)}>${label}</button>`,
    )}
  </nav>`
}

function StatusLine({ identity, status, snapshot, onSignOut }) {
  const nodes = snapshot?.nodes ?? []
  return html`<header class="top">
    <h1>Apiary</h1>
    <span class=${`live ${status}`} data-testid="stream-status">${status}</span>
    <span class="muted" data-testid="last-snapshot">last snapshot ${clock(snapshot?.atMs)}</span>
    <span class="muted">${nodes.filter((n) => !n.gone).length} of ${nodes.length} nodes</span>
    <span class="who" data-testid="who">${identity.role} <code title=${identity.pubkey}>${identity.pubkey.slice(0, 8)}…</code></span>
    <button type="button" onClick=${onSignOut}>Sign out</button>
  </header>`
}

function View({ view, identity, live, query, setQuery }) {
  const { snapshot, samples, supervision } = live
  switch (view) {
    case 'overview':
      return html`<${Overview} snapshot=${snapshot} samples=${samples} />`
    case 'communities':
      return html`<${Communities} snapshot=${snapshot} />`
    case 'agents':
      return html`<${Agents} snapshot=${snapshot} query=${query} setQuery=${setQuery} />`
    case 'hot':
      return html`<${Hot} snapshot=${snapshot} query=${query} setQuery=${setQuery} />`
    case 'supervision':
      return html`<${Supervision} rows=${supervision} />`
    case 'mesh':
      return html`<${Mesh} snapshot=${snapshot} />`
    default:
      return html`<${Moderation} identity=${identity} communities=${identity.communities} />`
  }
}

function Console({ identity, onExpired }) {
  const [view, setView] = useState('overview')
  const [query, setQuery] = useState({ offset: 0, limit: AGENTS_PAGE_SIZE })
  const streamQuery = view === 'agents' ? { view, ...query } : view === 'hot' ? { view, ranking: query.ranking } : { view }
  const live = useStream(streamQuery, onExpired)
  const signOut = () => deleteSession(identity.csrf).finally(onExpired)
  return html`<div class="console">
    <${StatusLine} identity=${identity} status=${live.status} snapshot=${live.snapshot} onSignOut=${signOut} />
    <${Tabs} tabs=${tabsOf(identity.role)} view=${view} setView=${setView} />
    <main role="tabpanel" aria-label=${view}>
      <${View} view=${view} identity=${identity} live=${live} query=${query} setQuery=${setQuery} />
    </main>
  </div>`
}

function App() {
  const [token, setToken] = useState(takeLoginToken)
  const [identity, setIdentity] = useState(null)
  const [checking, setChecking] = useState(!token)
  const [notice, setNotice] = useState('')

  useEffect(() => {
    if (token) return
    getMe()
      .then(setIdentity, () => {})
      .finally(() => setChecking(false))
  }, [])

  // a link pasted into a tab already on the console changes only the hash: the page is not loaded again
  useEffect(() => {
    const onHash = () => {
      const fresh = takeLoginToken()
      if (!fresh) return
      setIdentity(null)
      setNotice('')
      setToken(fresh)
    }
    addEventListener('hashchange', onHash)
    return () => removeEventListener('hashchange', onHash)
  }, [])

  const expired = () => {
    setIdentity(null)
    setNotice('auth-required: the session ended, sign in again')
  }
  if (checking) return html`<p class="muted">Loading the console…</p>`
  if (!identity) return html`<${SignIn} token=${notice ? undefined : token} notice=${notice} onSignedIn=${setIdentity} />`
  return html`<${Console} identity=${identity} onExpired=${expired} />`
}

const root = document.getElementById('app')
root.textContent = ''
render(html`<${App} />`, root)
