// The README's generated blocks: text between `<!-- name:start -->` and `<!-- name:end -->`, written by
// `npm run docs` and compared by the tests that keep each block equal to its source.

const markersOf = (name: string) => ({ start: `<!-- ${name}:start -->`, end: `<!-- ${name}:end -->` })

/** Where the block's body lies in `readme` (between the marker lines), or a clear error. */
function bodyRange(readme: string, name: string): { from: number; to: number } {
  const { start, end } = markersOf(name)
  const a = readme.indexOf(start)
  const b = readme.indexOf(end)
  if (a < 0 || b < 0) throw new Error(`README.md has no ${start} … ${end} markers`)
  if (b < a) throw new Error(`README.md has ${end} before ${start}`)
  if (readme.indexOf(start, a + 1) >= 0 || readme.indexOf(end, b + 1) >= 0) throw new Error(`README.md has the ${name} markers twice`)
  return { from: a + start.length, to: b }
}

/** The block's body as it stands in `readme`, without the newlines around it. */
export function markedBlock(readme: string, name: string): string {
  const { from, to } = bodyRange(readme, name)
  return readme.slice(from, to).replace(/^\n/, '').replace(/\n$/, '')
}

/** `readme` with the block's body replaced by `body`, each marker on its own line. */
export function withMarkedBlock(readme: string, name: string, body: string): string {
  const { from, to } = bodyRange(readme, name)
  return `${readme.slice(0, from)}\n${body}\n${readme.slice(to)}`
}
