// The phases of a connection attempt's handshake (docs/agent-client.md, State machine): one, the first relay
// whose NIP-11 fits; two, NIP-42 AUTH on every connect; four, the first heartbeat and the capabilities
// announcement, sent right behind the AUTH. Phase three is the socket itself (opening-socket.ts).
import type { NostrEvent } from '../../protocols/nip01/event.js'
import { KIND_AUTH } from '../../protocols/nip01/kinds.js'
import { signTemplate } from '../../protocols/nip01/sign.js'
import { prefixOf } from '../../protocols/reasons.js'
import type { Announcer, Registration } from './announcer.js'
import { DiscoveryRoundFailed, refusal, Transient } from './attempt-errors.js'
import { AgentError } from './error.js'
import type { ResolvedOptions } from './options.js'
import { probeRelay, type RelayProbe } from './relay-info.js'
import type { OkAnswer, RelaySocket } from './relay-socket.js'

/** Phase one: the first relay whose NIP-11 answers and fits, starting with the last one used (sticky). */
export async function discoverRelay(o: ResolvedOptions, startIndex: number): Promise<{ probe: RelayProbe; relayIndex: number }> {
  const unreachable: string[] = []
  let incompatible: AgentError | undefined
  for (let i = 0; i < o.relays.length; i++) {
    const relayIndex = (startIndex + i) % o.relays.length
    const url = o.relays[relayIndex]!
    try {
      return { probe: await probeRelay(url, o.fetch, o.handshakeTimeoutMs), relayIndex }
    } catch (error) {
      if (error instanceof AgentError) incompatible ??= error
      else unreachable.push(`${url}: ${(error as Error).message}`)
    }
  }
  // every relay answered and none can host an agent: waiting will not change that
  if (incompatible && unreachable.length === 0) throw incompatible
  throw new DiscoveryRoundFailed(`no relay answered NIP-11 (${unreachable.join('; ')})`)
}

/** Phase two: NIP-42 on every connect. A refusal for who we are is terminal; one for now is not. */
export async function authenticate(socket: RelaySocket, o: ResolvedOptions, relayUrl: string, challenge: string): Promise<void> {
  // NIP-42: the URL we connected to; the relay compares it with its community's host
  const tags = [
    ['relay', relayUrl],
    ['challenge', challenge],
  ]
  const auth = signTemplate(o.key, { kind: KIND_AUTH, content: '', tags }, Math.floor(o.clock.now() / 1000))
  const answer = await socket.sendAndAwaitOk('AUTH', auth, o.handshakeTimeoutMs).catch(() => undefined)
  if (answer === undefined) throw new Transient('no answer to AUTH')
  if (!answer.accepted) throw refusal('AUTH', answer, 'auth-rejected')
}

/**
 * Phase four: the first heartbeat, which starts the lease, then the capabilities announcement, sent right
 * behind the AUTH without waiting for its OK. The relay applies one connection's frames in arrival order and
 * judges the frames behind an AUTH as the AUTH left the connection (frame-sequence.ts), so registering costs no
 * round trip of its own. The heartbeat goes first so the announcement is delivered live when it is stored
 * (docs/agent-registry.md). A refused AUTH is the handshake's error, not these events'; a relay that judged
 * them before the AUTH (`auth-required:`) gets them again, in the same order, once the AUTH is accepted.
 * Events signed more than a second before a slow handshake got here are signed again: the heartbeat's
 * created_at is where the lease that discovery reads begins.
 */
export async function register(
  socket: RelaySocket,
  o: ResolvedOptions,
  announcer: Announcer,
  signed: Registration,
  authenticated: Promise<void>,
): Promise<void> {
  const stale = announcer.nowSeconds() - signed.heartbeat.created_at > 1
  const { announcement, heartbeat } = stale ? announcer.registration() : signed
  const steps: [NostrEvent, string][] = [
    [heartbeat, 'the first heartbeat'],
    [announcement, 'the capabilities announcement'],
  ]
  const sendForOk = (event: NostrEvent): Promise<OkAnswer | undefined> =>
    socket.sendAndAwaitOk('EVENT', event, o.handshakeTimeoutMs).catch(() => undefined)
  const answers = await Promise.all(steps.map(([event]) => sendForOk(event)))
  await authenticated
  for (const [i, [event, what]] of steps.entries()) {
    let answer = answers[i]
    if (answer && !answer.accepted && prefixOf(answer.message) === 'auth-required') answer = await sendForOk(event)
    if (answer === undefined) throw new Transient(`no OK for ${what}`)
    if (!answer.accepted) throw refusal(what, answer, 'restricted')
  }
}
