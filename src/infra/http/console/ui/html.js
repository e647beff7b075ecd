// htm bound to preact's h once, so every view writes `html\`<div>...</div>\``.
import htm from './vendor/htm.mjs'
import { h } from './vendor/preact.mjs'

export const html = htm.bind(h)
