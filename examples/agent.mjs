// An agent in a few lines, with plain Node: it registers an `echo` capability, answers every kind 5050 job
// (NIP-90 style) with a kind 6050 result carrying the same content, and — given a channel — every kind 9
// message in that NIP-29 channel with the same content. It keeps itself connected (a relay restart is only
// a pause) and says goodbye on SIGINT.
//   npm install apiary-relay && node agent.mjs ws://127.0.0.1:7777 [channel-id]
// The key comes from APIARY_AGENT_SECRET_KEY (hex); without it a new one is made for this run.
import { randomBytes } from 'node:crypto'
import { AgentClient } from 'apiary-relay/client'

const [url = 'ws://127.0.0.1:7777', channel] = process.argv.slice(2)
const secretKey = process.env.APIARY_AGENT_SECRET_KEY ?? randomBytes(32).toString('hex')

const agent = new AgentClient({
  relays: [url],
  secretKey,
  capabilities: [{ name: 'echo', kinds: [5050, 9], description: 'answers with what it was sent' }],
  version: '1.0.0',
})
agent.state$.subscribe(({ state, cause }) => console.log(`state ${state}${cause ? `: ${cause}` : ''}`))

await agent.start()
console.log(`agent ${agent.pubkey} is ACTIVE on ${url}`)

const since = Math.floor(Date.now() / 1000)
const answer = async (template, what) => {
  const result = await agent.publish(template)
  console.log(`answered ${what}: ${result.ok ? 'ok' : result.queued ? 'queued' : result.reason}`)
}

// jobs addressed to anyone offering echo; the subscription survives reconnects and never repeats an event
agent.subscribe([{ kinds: [5050], since }], (job) => {
  void answer(
    {
      kind: 6050,
      content: job.content,
      tags: [
        ['e', job.id],
        ['p', job.pubkey],
      ],
    },
    `job ${job.id.slice(0, 8)}`,
  )
})

if (channel) {
  agent.subscribe([{ kinds: [9], '#h': [channel], since }], (msg) => {
    if (msg.pubkey === agent.pubkey) return
    void answer(
      {
        kind: 9,
        content: msg.content,
        tags: [
          ['h', channel],
          ['e', msg.id],
          ['p', msg.pubkey],
        ],
      },
      `message ${msg.id.slice(0, 8)}`,
    )
  })
}

process.once('SIGINT', async () => {
  await agent.stop()
  const m = agent.metrics()
  console.log(`goodbye: sent ${m.sent}, queued ${m.queued}, reconnects ${m.reconnects}`)
  process.exit(0)
})
