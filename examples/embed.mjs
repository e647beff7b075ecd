// Run an Apiary node inside your own program, with plain Node (no TypeScript loader, no build of your own):
//   npm install apiary-relay ws && node embed.mjs
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ask, createRelay } from 'apiary-relay'
import WebSocket from 'ws'

const dataDir = mkdtempSync(join(tmpdir(), 'apiary-embed-'))
const relay = createRelay({ port: 0, dataDir, logLevel: 'warn' })

// Supervision events, from before the first actor starts: started, crashed, backoff, restarted, gave-up ...
const seen = new Set()
relay.supervision$.subscribe((e) => seen.add(e.type))

const url = await relay.listen()
console.log(`listening on ${url}; supervision so far: ${[...seen].join(', ')}`)

// A client subscribes to notes over WebSocket ...
const client = new WebSocket(url)
await new Promise((resolve, reject) => client.once('open', resolve).once('error', reject))
const frames = []
let wake = () => {}
client.on('message', (data) => {
  frames.push(JSON.parse(String(data)))
  wake()
})
const next = async (match) => {
  for (;;) {
    const found = frames.find(match)
    if (found) return found
    await new Promise((resolve) => {
      wake = resolve
    })
  }
}
client.send(JSON.stringify(['REQ', 'notes', { kinds: [1] }]))
await next((f) => f[0] === 'EOSE' && f[1] === 'notes')

// ... the host program publishes a note into the `default` community, signed with that community's key ...
const outcome = await relay.publish('default', { kind: 1, content: 'hello from the program that embeds the relay' })
console.log(`published: accepted=${outcome.accepted}`)

// ... and the client receives it live.
const [, , event] = await next((f) => f[0] === 'EVENT' && f[1] === 'notes')
console.log(`received: ${event.content} (signed by the relay: ${event.pubkey === relay.communityPubkey('default')})`)

// Typed messages straight to a community actor: here Stats, answered through a reply callback.
const stats = await ask(relay.community('default'), (reply) => ({ type: 'Stats', reply }), 1000)
console.log(`stats: ${JSON.stringify(stats)}`)

client.close()
await relay.close()
rmSync(dataDir, { recursive: true, force: true })
