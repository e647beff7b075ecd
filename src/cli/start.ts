// `apiary start`: one relay in this process, until SIGTERM or SIGINT. A signal closes it gracefully (1001 to
// clients, pending commits flushed) and the process exits 0; a second signal exits at once. A relay that
// can't start (a backend unreachable past startupTimeoutSeconds, the port taken) exits 1 with one line on
// stderr naming the cause. The relay runs in this process: signals reach it directly, with no wrapper.
import { createRelay } from '../relay/relay.js'
import { configFrom, parseCommon, usageError } from './options.js'

const USAGE = 'usage: apiary start [--port N] [--host ADDR] [--data-dir DIR] [--config FILE]\n'

/** A close that hangs (a stuck backend) must not keep a process manager waiting forever. */
const CLOSE_DEADLINE_MS = 30_000

export async function runStart(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const parsed = parseCommon(argv)
  if (!parsed.ok) return usageError('start', parsed.error, USAGE)
  const { values, positionals } = parsed
  if (values.help) {
    process.stdout.write(USAGE)
    return 0
  }
  if (positionals.length > 0 || (values.host?.length ?? 0) > 1) return usageError('start', 'takes flags only (one --host)', USAGE)
  const config = configFrom(values, env, values.host?.[0])
  const relay = createRelay(config)
  let signalled: NodeJS.Signals | undefined
  const stopRequested = new Promise<NodeJS.Signals>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      if (signalled) {
        process.stderr.write(`apiary: ${signal} again, exiting without waiting for the close\n`)
        process.exit(1)
      }
      signalled = signal
      resolve(signal)
    }
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
    // npm going away is a stop request, never a second one (systemd signals npm and us together)
    watchLauncher(env, () => {
      if (!signalled) onSignal('SIGTERM')
    })
  })
  try {
    const url = await Promise.race([relay.listen(), stopRequested.then(() => undefined)])
    if (url === undefined) {
      process.stderr.write(`apiary: stopped by ${signalled} before the relay was listening\n`)
      return exitAfter(relay.close(), 0)
    }
    process.stdout.write(`apiary relay listening on ${url} (data in ${config.dataDir})\n`)
  } catch (error) {
    process.stderr.write(`apiary: cannot start: ${error instanceof Error ? error.message : String(error)}\n`)
    return exitAfter(relay.close(), 1)
  }
  const signal = await stopRequested
  process.stdout.write(`apiary: ${signal}, closing (clients get 1001, pending commits are flushed)\n`)
  return exitAfter(relay.close(), 0)
}

/**
 * `npm start` and `npx apiary start` run the relay under npm (npm → sh → node), and npm does not pass a
 * SIGTERM on: killing the npm process would leave the relay running, orphaned. So when npm launched us (it
 * sets npm_command), the launcher going away counts as the stop signal: the relay is re-parented, and
 * closes gracefully as for SIGTERM. Run directly (`node bin/apiary.js`, systemd, a container), without npm's
 * variables in its environment, signals arrive as they are and this never fires: a relay started under
 * nohup from a shell outlives its shell as it should (started from inside an npm script, it follows npm).
 */
function watchLauncher(env: Record<string, string | undefined>, stop: () => void): void {
  if (env.npm_command === undefined && env.npm_lifecycle_event === undefined) return
  const launcher = process.ppid
  const timer = setInterval(() => {
    if (process.ppid === launcher) return
    clearInterval(timer)
    process.stderr.write('apiary: npm, which started this relay, has exited; closing as for SIGTERM\n')
    stop()
  }, LAUNCHER_POLL_MS)
  timer.unref()
}

// how soon an orphaned relay notices; a ppid read is one syscall
const LAUNCHER_POLL_MS = 500

/**
 * Ends the process once `closing` settles (or at the deadline): whatever a library left scheduled (a
 * driver's reconnect timer) must not keep a stopped relay's process alive.
 */
async function exitAfter(closing: Promise<void>, code: number): Promise<never> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), CLOSE_DEADLINE_MS)
  })
  const outcome = await Promise.race([closing.then(() => 'closed' as const), late]).catch((error: unknown) => {
    process.stderr.write(`apiary: close failed: ${error instanceof Error ? error.message : String(error)}\n`)
    return 'failed' as const
  })
  clearTimeout(timer)
  if (outcome === 'late') process.stderr.write(`apiary: close did not finish within ${CLOSE_DEADLINE_MS / 1000}s; exiting anyway\n`)
  process.exit(outcome === 'closed' ? code : 1)
}
