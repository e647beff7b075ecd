// State: the frame sequence (what arrived, what is being prepared, what waits its turn); the open
// subscription ids and the AUTH state live in the shared ConnView, which only this actor changes.
// Messages: Frame (one client message), Prepared (a frame's preparation came back), SubscriptionLost.
// Crash policy: temporary — a crash ends the connection (afterStop closes the socket); clients reconnect.
import { MIN_FRAME_CHARGE_BYTES } from '../../infra/ws/inbound-flow.js'
import { type ClientMessage, type ClientMessageError, parseClientMessage } from '../../protocols/nip01/client-message.js'
import { closedFrame } from '../../protocols/nip01/relay-message.js'
import { assertNever } from '../../protocols/result.js'
import { type ActorContext, type ActorDef, tell } from '../kernel/index.js'
import { applyAuth, applyCount, applyEvent, applyMalformed, applyReq, dropSubscription } from './apply.js'
import type { ConnectionDeps } from './connection-deps.js'
import { FrameSequence } from './frame-sequence.js'
import type { ConnectionMsg, Prepared } from './messages.js'
import { failedPreparation, prepareAuth, prepareEvent, prepareRead } from './prepare.js'

/** One frame in the sequence: parsed (or why not) on arrival; AUTH is the barrier (frame-sequence.ts). */
type Step = { barrier: boolean; bytes: number } & ({ parsed: ClientMessage } | { malformed: ClientMessageError })

interface ConnectionState {
  sequence: FrameSequence<Step, Prepared>
}

type Ctx = ActorContext<ConnectionMsg>

export const connectionPath = (id: string) => `connection/${id}`

/**
 * Frames prepared at once: enough to keep both verifier threads busy from one pipelining client without
 * unbounded promises. The bytes of frames waiting behind them are bounded by the edge (it stops reading).
 */
const MAX_IN_FLIGHT_FRAMES = 256
const READY: Prepared = { kind: 'go' }

export function connectionActor(deps: ConnectionDeps): ActorDef<ConnectionState, ConnectionMsg> {
  return {
    kind: 'connection',
    init: (ctx) => ({ sequence: newSequence(ctx, deps) }),
    handle: (state, msg) => handle(state, msg, deps),
    // the socket closed, the actor crashed, or the relay is shutting down: the community forgets this connection
    afterStop: () => {
      tell(deps.community.ref, { type: 'Disconnect', connId: deps.view.id })
      if (deps.ws.readyState === deps.ws.OPEN) deps.ws.close(1011, 'error: internal')
    },
    // every frame in the mailbox is charged at least MIN_FRAME_CHARGE_BYTES against the inbound bound, which
    // pauses the socket first; results of preparations add at most MAX_IN_FLIGHT_FRAMES
    mailboxCapacity: Math.ceil(deps.maxInboundBytesInFlight / MIN_FRAME_CHARGE_BYTES) * 2 + MAX_IN_FLIGHT_FRAMES,
    policy: { mode: 'temporary' },
  }
}

function handle(state: ConnectionState, msg: ConnectionMsg, deps: ConnectionDeps): ConnectionState {
  switch (msg.type) {
    case 'Frame': {
      const parsed = parseClientMessage(msg.text, deps.limits, deps.nowSeconds())
      const step: Step = parsed.ok
        ? { barrier: parsed.value.type === 'AUTH', bytes: msg.bytes, parsed: parsed.value }
        : { barrier: false, bytes: msg.bytes, malformed: parsed.error }
      state.sequence.arrive(step)
      return state
    }
    case 'Prepared':
      state.sequence.prepared(msg.seq, msg.result)
      return state
    case 'SubscriptionLost':
      if (deps.view.subs.has(msg.subId)) {
        dropSubscription(msg.subId, deps)
        deps.view.queue.pushControl(closedFrame(msg.subId, msg.reason))
      }
      return state
    default:
      return assertNever(msg)
  }
}

function newSequence(ctx: Ctx, deps: ConnectionDeps): FrameSequence<Step, Prepared> {
  const sequence: FrameSequence<Step, Prepared> = new FrameSequence<Step, Prepared>(MAX_IN_FLIGHT_FRAMES, {
    start: (seq, step) => {
      const work = 'parsed' in step ? preparationOf(step.parsed, deps) : undefined
      if (work === undefined) {
        sequence.prepared(seq, READY)
        return
      }
      // beside the actor: the outcome comes back as a message and waits for its turn in the sequence
      // a result the actor can't take would stall the sequence for good: end the connection instead, saying so
      const deliver = (result: Prepared) => {
        if (!tell(ctx.self, { type: 'Prepared', seq, result }) && deps.ws.readyState === deps.ws.OPEN)
          deps.ws.close(1011, 'error: connection overloaded')
      }
      work.then(deliver, (error: unknown) => {
        deps.log.error({ err: error, community: deps.community.id, conn: deps.view.id }, 'frame preparation failed')
        if ('parsed' in step) deliver(failedPreparation(step.parsed))
      })
    },
    apply: (_seq, step, result) => applyStep(step, result, deps),
  })
  return sequence
}

function preparationOf(m: ClientMessage, deps: ConnectionDeps): Promise<Prepared> | undefined {
  switch (m.type) {
    case 'EVENT':
      return prepareEvent(m, deps)
    case 'REQ':
    case 'COUNT':
      return prepareRead(m.filters, deps, m.type === 'REQ')
    case 'AUTH':
      return prepareAuth(m, deps)
    case 'CLOSE':
      return undefined
    default:
      return assertNever(m)
  }
}

function applyStep(step: Step, result: Prepared, deps: ConnectionDeps): void {
  const done = () => deps.release(step.bytes)
  if ('malformed' in step) {
    applyMalformed(step.malformed, deps)
    done()
    return
  }
  const m = step.parsed
  switch (m.type) {
    case 'EVENT':
      // its bytes count until its OK is out: the event is held until then
      applyEvent(m, result, deps, done)
      return
    case 'REQ':
      applyReq(m, result, deps)
      break
    case 'COUNT':
      applyCount(m, result, deps)
      break
    case 'CLOSE':
      dropSubscription(m.subId, deps)
      break
    case 'AUTH':
      applyAuth(m, result, deps)
      break
    default:
      assertNever(m)
  }
  done()
}
