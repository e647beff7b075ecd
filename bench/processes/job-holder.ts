// Child of bench/lib/load/job-cluster.ts: an agent offering `bench-hold` that accepts every job it is assigned
// and never finishes one, telling its parent (IPC) each assignment. The parent kills it with SIGKILL to measure
// how long the relay takes to give the job to another agent.
import { benchKeys } from '../lib/fixtures'
import { agentOn, HOLD } from '../lib/load/job-cluster'
import { type Key, send, sign, tagOf } from '../lib/load/jobs'

const [url, index] = process.argv.slice(2)
if (!url || index === undefined || !process.send) {
  console.error('usage: forked by bench/lib/load/job-cluster.ts with <relay url> <key index>')
  process.exit(2)
}
const key = benchKeys(1, 'jobs-cluster-holder', Number(index))[0] as Key
const ws = await agentOn(url, key, HOLD, (assignment) => {
  const request = JSON.parse(assignment.content) as { id: string; pubkey: string }
  const generation = tagOf(assignment, 'generation')!
  send(
    ws,
    sign(
      key,
      7000,
      [
        ['status', 'processing'],
        ['e', request.id],
        ['p', request.pubkey],
        ['generation', generation],
      ],
      '',
    ),
  )
  process.send?.({ job: request.id, generation: Number(generation) })
})
process.send({ ready: true })
process.on('disconnect', () => process.exit(0))
