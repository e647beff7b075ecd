// Signing in, two ways: a NIP-07 extension signs the relay's challenge (kind 27235, as NIP-98 shapes it), or
// a one-time link from `apiary console login` carries a signed token in the URL's hash, which never reaches a
// server log; the page posts it at once and removes it from the address bar.
import { getMe, postChallenge, postSession } from './api.js'
import { html } from './html.js'
import { useEffect, useState } from './vendor/hooks.mjs'

const HTTP_AUTH_KIND = 27235

/** the `#login=<token>` of a one-time link, if the page was opened with one */
export function takeLoginToken() {
  const match = /^#login=([A-Za-z0-9_-]+=*)$/.exec(location.hash)
  if (!match) return undefined
  history.replaceState(null, '', location.pathname + location.search)
  return match[1]
}

async function signInWithExtension() {
  if (!window.nostr) throw new Error('invalid: no NIP-07 extension found in this browser')
  const { challenge } = await postChallenge()
  const pubkey = await window.nostr.getPublicKey()
  const event = await window.nostr.signEvent({
    kind: HTTP_AUTH_KIND,
    created_at: Math.floor(Date.now() / 1000),
    content: '',
    pubkey,
    tags: [
      ['u', `${location.origin}/console/api/session`],
      ['method', 'POST'],
      ['challenge', challenge],
    ],
  })
  return postSession({ event })
}

/** `token`: a one-time link's, posted as soon as the screen shows; `onSignedIn` gets the ConsoleIdentity */
export function SignIn({ token, notice, onSignedIn }) {
  const [error, setError] = useState(notice || '')
  const [busy, setBusy] = useState(Boolean(token))

  const attempt = (signIn) => {
    setBusy(true)
    setError('')
    signIn()
      .then(getMe)
      .then(onSignedIn)
      .catch((e) => setError(e.message))
      .finally(() => setBusy(false))
  }

  useEffect(() => {
    if (token) attempt(() => postSession({ token }))
  }, [token])

  return html`<main class="sign-in" data-testid="sign-in">
    <h1>Apiary console</h1>
    <p>Operators see the whole relay; a community's admins see their community.</p>
    <button type="button" class="primary" disabled=${busy} onClick=${() => attempt(signInWithExtension)}>
      Sign in with extension
    </button>
    <p class="muted">
      Without an extension, run <code>apiary console login --url ${location.origin}</code> on the relay's machine
      and open the link it prints (valid for 60 s, once).
    </p>
    ${busy && html`<p role="status">Signing in…</p>`}
    ${error && html`<p class="error" role="alert" data-testid="sign-in-error">${error}</p>`}
  </main>`
}
