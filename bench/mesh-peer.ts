// Child of bench/mesh-tunnel.ts: a mesh tunnel server whose runtime is attested by the relay key in
// BENCH_MESH_RELAY_SECRET, answering every request with one byte. It tells its parent its port and runtime
// over IPC; the parent SIGSTOPs it to play a peer that stops reading.
import { hexToBytes } from '@noble/hashes/utils.js'
import { startTunnelServer } from '../src/infra/mesh/tunnel-handshake'
import { meshIdentity, ONE_BYTE_ANSWER } from './mesh-tunnel'

const secret = process.env.BENCH_MESH_RELAY_SECRET
if (!secret || !process.send) {
  console.error('usage: forked by bench/mesh-tunnel.ts with BENCH_MESH_RELAY_SECRET')
  process.exit(2)
}
const { identity, setup } = meshIdentity(hexToBytes(secret), ONE_BYTE_ANSWER)
const server = await startTunnelServer(
  '127.0.0.1',
  0,
  setup,
  () => {},
  () => {},
)
process.send({ port: server.port, runtime: identity.runtimeKey.pubkey })
process.on('disconnect', () => {
  void server.close().finally(() => process.exit(0))
})
