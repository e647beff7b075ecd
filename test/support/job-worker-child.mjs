// A worker agent in a process of its own, serving one capability of dispatched jobs (docs/jobs.md), for fault
// tests that kill it (SIGKILL) or freeze it (SIGSTOP) while it holds a job. Runs the built client (dist/).
// Each job takes 20–200 ms, streams 3 chunks, and returns a result naming this worker and the input. It prints
// one line per step, which is all the test knows of the work done:
//   ready <pubkey>                    registered
//   started <job> <generation>        the handler began (the relay took its `processing`)
//   completed <job> <generation>      the handler returned with the job still this worker's
//   aborted <job> <generation> <code>  the job was taken away (the JobError code of ctx.signal's reason)
//   refused <job> <generation> <kind>:<prefix>  the relay answered OK false to something it sent about a job
//   queued <job> <generation> <kind>  something it sent about a job waits in the client's offline queue (its
//                                     answer, after a reconnect, is not seen here)
//   answered <job> <generation>       the relay took its result (OK true)
// usage: node job-worker-child.mjs <relay ws url> <secret hex> <capability> <name> <seed>
import { AgentClient } from '../../dist/client/index.js'

const [url, secretKey, capability, name, seed] = process.argv.slice(2)

/** mulberry32: each worker's job durations follow from the test's seed */
function prng(s) {
  let a = s >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const random = prng(Number(seed))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const say = (line) => process.stdout.write(`${line}\n`)

const agent = new AgentClient({
  relays: [url],
  secretKey,
  capabilities: [{ name: capability, kinds: [5000] }],
  // the relay's presence heartbeat is 1 s in these tests, so its lease is 3 s
  heartbeatSeconds: 1,
  leaseSeconds: 3,
  sessionSeconds: 300,
  // the relay's rates are generous; the client's own throttle would pace a fleet's chunks to 10/s
  throttle: {
    global: { ratePerSecond: 10_000, burst: 10_000 },
    perChannel: { ratePerSecond: 10_000, burst: 10_000 },
    perRecipient: { ratePerSecond: 10_000, burst: 10_000 },
  },
})

// serve() publishes through the instance's publish(), so wrapping it shows every refusal of a job report
// (the acceptance and the result included, which the handler never sees)
const publish = agent.publish.bind(agent)
agent.publish = async (template) => {
  const r = await publish(template)
  const job = template.tags?.find((t) => t[0] === 'e')?.[1]
  const generation = template.tags?.find((t) => t[0] === 'generation')?.[1]
  if (job === undefined || generation === undefined) return r
  if (r.ok && template.kind >= 6000 && template.kind < 7000) say(`answered ${job} ${generation}`)
  else if (!r.ok && r.queued) say(`queued ${job} ${generation} ${template.kind}`)
  else if (!r.ok) say(`refused ${job} ${generation} ${template.kind}:${r.reason.split(':')[0]}`)
  return r
}

agent.serve(capability, async (job, ctx) => {
  say(`started ${job.id} ${job.generation}`)
  const totalMs = 20 + Math.floor(random() * 181)
  try {
    for (let part = 0; part < 3; part++) {
      await sleep(totalMs / 3)
      await ctx.stream(`${name} ${job.input} part ${part}`)
    }
    if (ctx.signal.aborted) throw ctx.signal.reason
  } catch (error) {
    say(`aborted ${job.id} ${job.generation} ${error?.code ?? 'error'}`)
    throw error
  }
  say(`completed ${job.id} ${job.generation}`)
  return JSON.stringify({ worker: name, input: job.input })
})

await agent.start()
say(`ready ${agent.pubkey}`)
