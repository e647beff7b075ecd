// Child of bench/lib/mesh/tunnel-load.ts: a mesh tunnel server whose runtime is attested by the relay key given
// as its argument (hex), answering every request with one byte. It tells its parent its port and runtime over
// IPC; the parent SIGSTOPs it to play a peer that stops reading.
import { hexToBytes } from '@noble/hashes/utils.js'
import { startTunnelServer } from '../internal'
import { meshIdentity, ONE_BYTE_ANSWER } from '../lib/mesh/tunnel-load'

const secret = process.argv[2]
if (!secret || !process.send) {
  console.error('usage: forked by bench/lib/mesh/tunnel-load.ts with <relay secret key hex>')
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
