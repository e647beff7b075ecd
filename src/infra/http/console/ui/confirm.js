// A modal that names the exact action before it is sent; the browser's <dialog> traps focus and closes on Esc.
import { html } from './html.js'
import { useEffect, useRef } from './vendor/hooks.mjs'

export function Confirm({ text, onConfirm, onCancel }) {
  const dialog = useRef(null)
  useEffect(() => {
    dialog.current.showModal()
    return () => dialog.current?.open && dialog.current.close()
  }, [])
  return html`<dialog ref=${dialog} class="confirm" data-testid="confirm" aria-labelledby="confirm-title" onCancel=${onCancel}>
    <h2 id="confirm-title">Confirm</h2>
    <p data-testid="confirm-text">${text}</p>
    <div class="actions">
      <button type="button" onClick=${onCancel}>Cancel</button>
      <button type="button" class="primary danger" data-testid="confirm-yes" onClick=${onConfirm}>Do it</button>
    </div>
  </dialog>`
}
