import { describe, expect, it } from 'vitest'
import { forgetFiredImmediate, type NactActor, nact, nactActorOf } from '../../../src/actors/kernel/nact-binding'
import { waitTurns } from './harness'

/** One raw nact actor whose handler records each message, and clears nact's fired immediate when `forget`. */
function spawnRecorder(system: ReturnType<typeof nact.start>, name: string, forget: boolean) {
  const seen: unknown[] = []
  let actor: NactActor | undefined
  const ref = nact.spawn(
    system,
    (_state, msg) => {
      if (forget) forgetFiredImmediate(actor)
      seen.push(msg)
      return null
    },
    name,
    { initialStateFunc: () => null, onCrash: (_m, _e, ctx) => ctx.stop },
  )
  actor = nactActorOf(ref)
  return { ref, seen, actor: () => actor }
}

const handled = async (seen: unknown[], n: number) => {
  await waitTurns(() => seen.length >= n, `${n} messages handled`, 100)
  expect(seen).toHaveLength(n)
}

describe('the door to nact', () => {
  it('finds the actor behind a reference, and none behind a stopped one', () => {
    const system = nact.start({ name: 'binding-find' })
    const { ref, actor } = spawnRecorder(system, 'a', false)
    expect(actor()).toBeDefined()
    nact.stop(ref)
    expect(nactActorOf(ref)).toBeUndefined()
    nact.stop(system)
  })

  it('nact keeps the handle of an actor’s fired immediate until its next message (the defect), and forgetFiredImmediate drops it', async () => {
    const system = nact.start({ name: 'binding-immediate' })
    const kept = spawnRecorder(system, 'kept', false)
    const forgotten = spawnRecorder(system, 'forgotten', true)
    for (const a of [kept, forgotten]) nact.dispatch(a.ref, { type: 'one' })
    await handled(kept.seen, 1)
    await handled(forgotten.seen, 1)
    // if nact stops keeping it, the wrapper (and this test's first half) can go
    expect(kept.actor()?.immediate).toBeDefined()
    expect(forgotten.actor()?.immediate).toBeUndefined()
    // and the actor still takes the next message
    nact.dispatch(forgotten.ref, { type: 'two' })
    await handled(forgotten.seen, 2)
    nact.stop(system)
  })
})
