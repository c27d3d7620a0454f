/**
 * The pure part of a session's mirror in MongoDB (mirror.ts): how journal entries become
 * documents and back. No driver import, no I/O.
 *
 * An entry is kept as its JSON text, cut into parts of at most PART_CHARS characters: one
 * entry (a submit of 100,000 tasks) can be larger than MongoDB's 16 MB document limit. Part i
 * of entry n is `{session, n, i, of, text}`, unique on (session, n, i).
 */

/** Characters of JSON per document: well under 16 MB, even for text of 4-byte characters. */
export const PART_CHARS = 2 * 1024 * 1024;

export interface JournalPartDoc {
  session: string;
  /** The entry's place in the journal, from 0. */
  n: number;
  /** This part's place in the entry, from 0. */
  i: number;
  /** The entry's number of parts. */
  of: number;
  text: string;
}

/** The documents of entry `n`. */
export function partsOf(
  session: string,
  n: number,
  entry: unknown,
  partChars = PART_CHARS,
): JournalPartDoc[] {
  const text = JSON.stringify(entry);
  const of = Math.max(1, Math.ceil(text.length / partChars));
  return Array.from({ length: of }, (_, i) => ({
    session,
    n,
    i,
    of,
    text: text.slice(i * partChars, (i + 1) * partChars),
  }));
}

/**
 * The journal the documents hold, read in (n, i) order: the entries from 0 up to the first one
 * missing or incomplete. A client that died mid-write leaves its last entry incomplete, and
 * entries are written in order, so nothing after a missing one was meant to be kept. Throws a
 * message naming the entry whose text is not JSON.
 */
export function entriesOf(docs: Iterable<JournalPartDoc>): unknown[] {
  const entries: unknown[] = [];
  let text = '';
  let at = { n: 0, i: 0 };
  for (const d of docs) {
    if (d.n !== at.n || d.i !== at.i) break;
    text += d.text;
    if (d.i + 1 < d.of) {
      at = { n: d.n, i: d.i + 1 };
      continue;
    }
    try {
      entries.push(JSON.parse(text));
    } catch (e) {
      throw new Error(`journal entry ${d.n} is not JSON (${(e as Error).message})`, { cause: e });
    }
    text = '';
    at = { n: d.n + 1, i: 0 };
  }
  return entries;
}
