// `apiary keygen`: a fresh secret key and its pubkey, hex, one per line (`secret <hex>`, `pubkey <hex>`).
import { schnorr } from '@noble/curves/secp256k1.js'
import { bytesToHex } from '@noble/hashes/utils.js'

export async function runKeygen(argv: string[]): Promise<number> {
  if (argv.length > 0) {
    process.stderr.write('usage: apiary keygen   (takes no arguments)\n')
    return 2
  }
  const sk = schnorr.utils.randomSecretKey()
  process.stdout.write(`secret ${bytesToHex(sk)}\npubkey ${bytesToHex(schnorr.getPublicKey(sk))}\n`)
  return 0
}
