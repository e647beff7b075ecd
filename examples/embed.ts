// Run an Apiary node inside your own program: `npx tsx examples/embed.ts`
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { ask, type CommunityMsg, createRelay } from '../src/index'

const relay = createRelay({ port: 0, dataDir: mkdtempSync(join(tmpdir(), 'apiary-example-')), logLevel: 'warn' })
relay.supervision$.subscribe((e) => {
  if (e.type !== 'started' && e.type !== 'stopped') console.log('supervision:', e.type)
})
const url = await relay.listen()
console.log('relay listening on', url, 'relay pubkey', relay.pubkey)

// A client subscribes to notes...
const client = new WebSocket(url)
await new Promise((resolve) => client.once('open', resolve))
const received = new Promise<unknown>((resolve) =>
  client.on('message', (data) => {
    const frame = JSON.parse(String(data)) as unknown[]
    if (frame[0] === 'EVENT') resolve(frame[2])
  }),
)
client.send(JSON.stringify(['REQ', 'notes', { kinds: [1], since: Math.floor(Date.now() / 1000) - 5 }]))

// ...and the host program publishes a relay-signed note into the `default` community.
const outcome = await relay.publish('default', { kind: 1, content: 'hello from the program that embeds the relay' })
console.log('publish outcome:', outcome)
console.log('the client received:', await received)

// Typed messages straight to the community actor.
const ref = relay.community('default')
if (ref) console.log('stats:', await ask<CommunityMsg, unknown>(ref, (reply) => ({ type: 'Stats', reply }), 1000))

client.close()
await relay.close()
