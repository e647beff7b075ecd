// An agent in a process of its own, for tests that stop it with signals as an operator's machine would:
// SIGSTOP freezes its heartbeats with its socket still open, SIGKILL drops the socket, SIGTERM says goodbye.
// Runs the built client (dist/, which the test setup builds). Prints `started <pubkey>` once registered.
// usage: node agent-child.mjs <relay ws url> <secret hex> <heartbeat seconds> <lease seconds> <capability>
import { AgentClient } from '../../dist/client/index.js'

const [url, secretKey, heartbeatSeconds, leaseSeconds, capability] = process.argv.slice(2)
const agent = new AgentClient({
  relays: [url],
  secretKey,
  capabilities: [{ name: capability, kinds: [5050] }],
  heartbeatSeconds: Number(heartbeatSeconds),
  leaseSeconds: Number(leaseSeconds),
  sessionSeconds: 300,
  goodbyeTimeoutMs: 2_000,
})

process.on('SIGTERM', () => {
  agent.stop().then(
    () => process.exit(0),
    () => process.exit(1),
  )
})

await agent.start()
process.stdout.write(`started ${agent.pubkey}\n`)
