// The mesh's last line of defence: a session's writes are fenced by the database itself. Each
// store keeps, per (community, session), the highest generation that has written and its owner; a fenced
// write first claims its generation — accepted when `generation >= stored` (an equal generation only for the
// same owner), then stored — and otherwise fails whole, writing nothing.
//
// So an owner that slept past its lease (SIGSTOP, a GC pause, a partition) and wakes believing it still owns
// the session cannot write once its successor has written once, whatever the lease checks said.

export interface SessionFence {
  community: string
  session: string
  generation: number
  /** the owning runtime id */
  owner: string
}

/** What a fenced transaction raises when a newer owner already wrote; nothing of it was written. */
export class FencedError extends Error {
  readonly code = 'APIARY_MESH_FENCED'
  constructor(
    readonly fence: SessionFence,
    cause?: unknown,
  ) {
    super(`mesh session ${fence.community}/${fence.session}: generation ${fence.generation} of ${fence.owner.slice(0, 12)} is fenced off`, {
      cause,
    })
  }
}
