// Which node owns a channel (its /mesh/status lists the session as local), and a fresh channel created
// through a chosen node, which then owns it.
import { type channelEvents, openModerationClient } from './moderation-client'
import { type MeshCluster, type MeshNode, sleep } from './nodes'

/** The node whose /mesh/status has `channel` as a local session, and its generation. */
export async function findOwner(cluster: MeshCluster, nodes: MeshNode[], channel: string): Promise<{ index: number; generation: number }> {
  const deadline = performance.now() + 10_000
  for (;;) {
    const views = await Promise.all(nodes.map((n) => cluster.status(n).catch(() => undefined)))
    for (const [index, v] of views.entries()) {
      const s = v?.sessions.find((x) => x.session === `channel:${channel}` && x.local)
      if (s) return { index, generation: s.generation }
    }
    if (performance.now() > deadline) throw new Error(`no node owns channel ${channel} 10 s after its creation`)
    await sleep(50)
  }
}

/** A fresh channel, created through `node` (which then owns it); throws when refused. */
export async function createChannel(
  cluster: MeshCluster,
  node: MeshNode,
  events: ReturnType<typeof channelEvents>,
  channel: string,
): Promise<void> {
  const creator = await openModerationClient(node.url, cluster.host)
  try {
    const a = await creator.send(events.create(channel))
    if (!a.accepted) throw new Error(`9007 for ${channel} refused: ${a.message}`)
  } finally {
    creator.close()
  }
}
