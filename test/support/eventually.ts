/** Polls `probe` every 100 ms until `holds` or `ms` pass; resolves with its last value (for the test to assert). */
export async function eventually<T>(probe: () => Promise<T>, holds: (v: T) => boolean, ms = 5_000): Promise<T> {
  const deadline = performance.now() + ms
  let v = await probe()
  while (!holds(v) && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100))
    v = await probe()
  }
  return v
}
