import { isAuthorOnlyKind } from '../../protocols/dm-access'
import type { Filter } from '../../protocols/nip01/filter'

const AUTHOR_ONLY_KINDS = [4, 1059].filter(isAuthorOnlyKind)

/**
 * NIP-45 COUNT must not reveal author-only events (DMs, gift wraps) either. Counting what a connection may
 * read, exactly, in three store counts:
 *   readable(∪F) = |∪F| − |∪F ∩ DM| + |∪F ∩ DM ∩ (author ∈ A ∪ p-tag ∈ A)|
 * where DM is the author-only kinds and A the connection's authenticated pubkeys.
 */
export function planReadableCount(filters: Filter[], authed: ReadonlySet<string>) {
  const dm: Filter[] = []
  const dmReadable: Filter[] = []
  const a = [...authed]
  for (const f of filters) {
    const kinds = f.kinds ? f.kinds.filter(isAuthorOnlyKind) : AUTHOR_ONLY_KINDS
    if (kinds.length === 0) continue
    const restricted: Filter = { ...f, kinds }
    dm.push(restricted)
    if (a.length === 0) continue
    const authors = f.authors ? f.authors.filter((x) => authed.has(x)) : a
    if (authors.length) dmReadable.push({ ...restricted, authors })
    const p = f.tags?.p ? f.tags.p.filter((x) => authed.has(x)) : a
    if (p.length) dmReadable.push({ ...restricted, tags: { ...f.tags, p } })
  }
  return { all: filters, dm, dmReadable }
}
