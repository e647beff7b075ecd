import { createServer, type Server } from 'node:http'
import { bytesToHex } from '@noble/hashes/utils.js'
import { afterEach } from 'vitest'
import { type WebSocket, WebSocketServer } from 'ws'
import { AgentClient, type AgentClientOptions } from '../../../src/client/index'
import type { NostrEvent } from '../../../src/protocols/nip01/event'
import { makeKeys } from '../../support/events'

/**
 * A scripted relay (NIP-11 over HTTP, NIP-01/42 over WebSocket on the same port) for what a real relay only
 * does under conditions a test can't easily make: AUTH refused with each prefix, `rate-limited: retry in Ns`,
 * a goodbye that is never acknowledged, a subscription CLOSED while the connection stays up.
 */
export interface ScriptedRelay {
  url: string
  /** every connection's frames from the agent, in order, with when each arrived (Date.now()) */
  connections: { at: number; frames: unknown[][]; frameAt: number[]; closeCode?: number; ws: WebSocket; remoteAddress?: string }[]
  close(): Promise<void>
}

export type Answer = (frame: unknown[], ws: WebSocket, connection: number) => void

export const okAll: Answer = (f, ws) => {
  if (f[0] === 'EVENT' || f[0] === 'AUTH') ws.send(JSON.stringify(['OK', (f[1] as NostrEvent).id, true, '']))
  if (f[0] === 'REQ') ws.send(JSON.stringify(['EOSE', f[1]]))
}

export async function startScriptedRelay(
  answer: Answer = okAll,
  nips = [1, 11, 42],
  opts: { challenge?: boolean; info?: Record<string, unknown> } = {},
): Promise<ScriptedRelay> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/nostr+json' }).end(JSON.stringify({ supported_nips: nips, ...opts.info }))
  })
  const wss = new WebSocketServer({ server })
  const connections: ScriptedRelay['connections'] = []
  wss.on('connection', (ws, req) => {
    const c: ScriptedRelay['connections'][number] = {
      at: Date.now(),
      frames: [],
      frameAt: [],
      closeCode: undefined,
      ws,
      remoteAddress: req.socket.remoteAddress,
    }
    const index = connections.push(c) - 1
    ws.on('close', (code) => {
      c.closeCode = code
    })
    if (opts.challenge !== false) ws.send(JSON.stringify(['AUTH', `challenge-${index}`]))
    ws.on('message', (data) => {
      const f = JSON.parse(String(data)) as unknown[]
      c.frames.push(f)
      c.frameAt.push(Date.now())
      answer(f, ws, index)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `ws://127.0.0.1:${port}`,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate()
        wss.close()
        server.close(() => resolve())
      }),
  }
}

/** Agents (and relays) a test opened, each stopped after it: `agentOn(relay, options)` and `track(x)`. */
export function useAgents() {
  const opened: { stop(): Promise<void> }[] = []
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((x) => x.stop()))
  })
  const agentOn = (r: ScriptedRelay, extra: Partial<AgentClientOptions> = {}) => {
    const agent = new AgentClient({
      relays: [r.url],
      secretKey: bytesToHex(makeKeys().secretKey),
      capabilities: [{ name: 'echo', kinds: [5050] }],
      ...extra,
    })
    opened.push(agent)
    return agent
  }
  return { agentOn, track: (x: { stop(): Promise<void> }) => opened.push(x) }
}
