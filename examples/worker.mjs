// A worker agent for dispatched jobs (docs/jobs.md): it serves the `shout` capability, so the relay hands it
// jobs one at a time, each to this agent alone; it streams its answer word by word and returns it whole. The
// relay takes the job back if this process dies, and refuses what it sends once the job has gone elsewhere
// (ctx.signal then fires). It keeps itself connected across relay restarts and says goodbye on SIGINT.
//   npm install apiary-relay && node worker.mjs ws://127.0.0.1:7777
// The key comes from APIARY_AGENT_SECRET_KEY (hex); without it a new one is made for this run.
import { randomBytes } from 'node:crypto'
import { AgentClient } from 'apiary-relay/client'

const [url = 'ws://127.0.0.1:7777'] = process.argv.slice(2)
const secretKey = process.env.APIARY_AGENT_SECRET_KEY ?? randomBytes(32).toString('hex')

const agent = new AgentClient({ relays: [url], secretKey, capabilities: [] })
agent.state$.subscribe(({ state, cause }) => console.log(`state ${state}${cause ? `: ${cause}` : ''}`))

agent.serve('shout', async (job, ctx) => {
  console.log(`job ${job.id.slice(0, 8)} (generation ${job.generation}): ${job.input}`)
  const words = job.input.toUpperCase().split(' ')
  for (const word of words) {
    if (ctx.signal.aborted) throw ctx.signal.reason
    await ctx.stream(`${word} `)
  }
  return `${words.join(' ')}!`
})

await agent.start()
console.log(`worker ${agent.pubkey} is ACTIVE on ${url}`)

process.once('SIGINT', async () => {
  await agent.stop()
  console.log('goodbye')
  process.exit(0)
})
