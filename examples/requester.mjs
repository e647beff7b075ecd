// A requester for dispatched jobs (docs/jobs.md): it asks for `shout` with its input, prints the chunks as the
// worker streams them and then the one result. An agent that only requests needs no capability.
//   npm install apiary-relay && node requester.mjs ws://127.0.0.1:7777 "hello hive"
import { randomBytes } from 'node:crypto'
import { AgentClient, JobError } from 'apiary-relay/client'

const [url = 'ws://127.0.0.1:7777', input = 'hello hive'] = process.argv.slice(2)
const client = new AgentClient({ relays: [url], secretKey: randomBytes(32).toString('hex'), capabilities: [] })
await client.start()

const call = client.request('shout', input, { deadlineMs: 30_000 })
const streamed = (async () => {
  for await (const chunk of call.chunks) process.stdout.write(`chunk ${chunk.seq}: ${chunk.data}\n`)
})()
try {
  const result = await call
  await streamed
  console.log(`result from ${result.agent.slice(0, 8)}: ${result.content}`)
} catch (error) {
  console.log(error instanceof JobError ? `job failed: ${error.code}: ${error.message}` : `error: ${error}`)
  process.exitCode = 1
}
await client.stop()
