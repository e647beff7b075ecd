// Moderation through the relay's NIP-86 methods, each after a confirmation naming the exact call; the relay
// checks the scope again (an admin acts on their communities only; archiving is an operator's).
import { moderate } from './api.js'
import { Confirm } from './confirm.js'
import { html } from './html.js'
import { useState } from './vendor/hooks.mjs'

const reasonField = { name: 'reason', label: 'reason (optional)' }

const ACTIONS = [
  { method: 'banpubkey', title: 'Ban a pubkey', fields: [{ name: 'pubkey', label: 'pubkey (hex)', required: true }, reasonField] },
  { method: 'unbanpubkey', title: 'Unban a pubkey', fields: [{ name: 'pubkey', label: 'pubkey (hex)', required: true }, reasonField] },
  { method: 'blockip', title: 'Block an IP or range', fields: [{ name: 'ip', label: 'IP or CIDR range', required: true }, reasonField] },
  { method: 'unblockip', title: 'Unblock an IP or range', fields: [{ name: 'ip', label: 'IP or CIDR range', required: true }] },
  { method: 'banevent', title: 'Ban an event', fields: [{ name: 'id', label: 'event id (hex)', required: true }, reasonField] },
  { method: 'archivecommunity', title: 'Archive a community', operatorOnly: true, fields: [] },
]

/** NIP-86 params: the fields in order, a trailing empty optional one left out */
function paramsOf(action, values) {
  const params = action.fields.map((f) => (values[f.name] ?? '').trim())
  while (params.length > 0 && params[params.length - 1] === '' && !action.fields[params.length - 1].required) params.pop()
  return params
}

function ActionForm({ action, communities, onAsk }) {
  const [values, setValues] = useState({ community: communities[0] ?? '' })
  const set = (name) => (e) => setValues({ ...values, [name]: e.target.value })
  const submit = (e) => {
    e.preventDefault()
    const params = action.method === 'archivecommunity' ? [values.community] : paramsOf(action, values)
    onAsk({ community: values.community, method: action.method, params })
  }
  const id = (name) => `${action.method}-${name}`
  return html`<form class="card action" data-testid=${`form-${action.method}`} onSubmit=${submit}>
    <h2>${action.title}</h2>
    <label for=${id('community')}>community</label>
    <select id=${id('community')} name="community" value=${values.community} onChange=${set('community')}>
      ${communities.map((c) => html`<option value=${c}>${c}</option>`)}
    </select>
    ${action.fields.map(
      (f) => html`<label for=${id(f.name)}>${f.label}</label>
        <input id=${id(f.name)} name=${f.name} required=${Boolean(f.required)} value=${values[f.name] ?? ''} onInput=${set(f.name)} />`,
    )}
    <button type="submit" class="submit">${action.title}</button>
  </form>`
}

function Outcome({ outcome }) {
  if (!outcome) return null
  const failed = outcome.error !== undefined
  return html`<p class=${failed ? 'error' : 'ok'} role="status" data-testid="moderation-result">
    <code>${outcome.call}</code>: ${failed ? outcome.error : `result ${JSON.stringify(outcome.result)}`}
  </p>`
}

export function Moderation({ identity, communities }) {
  const [asked, setAsked] = useState(null)
  const [outcome, setOutcome] = useState(null)
  const actions = ACTIONS.filter((a) => !a.operatorOnly || identity.role === 'operator')
  const describe = (c) => `${c.method}(${c.params.map((p) => JSON.stringify(p)).join(', ')}) in ${c.community}`
  const send = () => {
    const call = asked
    setAsked(null)
    moderate(identity.csrf, call.community, call.method, call.params).then(
      (res) => setOutcome({ call: describe(call), result: res.result, error: res.error }),
      (e) => setOutcome({ call: describe(call), error: e.message }),
    )
  }
  return html`<section data-testid="view-moderation">
    <${Outcome} outcome=${outcome} />
    <div class="actions-grid">
      ${actions.map((a) => html`<${ActionForm} key=${a.method} action=${a} communities=${communities} onAsk=${setAsked} />`)}
    </div>
    ${asked && html`<${Confirm} text=${describe(asked)} onConfirm=${send} onCancel=${() => setAsked(null)} />`}
  </section>`
}
