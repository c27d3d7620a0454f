import { InternalError } from '../../errors';
import { ownCopy } from '../../lib/strings';

/** Feed positions are stored as u32: the embedded store holds at most this many notifications. */
export const MAX_POSITION = 0xfffffffe;

/**
 * The embedded store's per-uid index: for each uid, its entries [key code, feed position] in
 * feed order. It serves idempotence (a key held by a uid) and history(uid).
 *
 * Everything lives in typed arrays, so that opening a session of millions of uids costs neither
 * a Map entry and an array object per uid nor the garbage collector's time over them:
 *
 * - uids are numbered in order of first sight; a uid's characters are a range of a _text_ (for
 *   a sealed segment, its summary's whole uid table as one string; for a uid first seen in an
 *   append, the uid string itself), found through an open-addressing hash table of uid numbers;
 * - entries form one singly linked list per uid (head, last, next), in three parallel arrays:
 *   12 bytes per notification.
 *
 * Key codes are int32 (see packKey in segment-summary.ts; the store gives rare keys negative
 * codes); positions u32.
 */
export class UidIndex {
  private readonly texts: string[] = [];
  private textOf: Int32Array = new Int32Array(1024);
  private startOf: Int32Array = new Int32Array(1024);
  private lengthOf: Int32Array = new Int32Array(1024);
  private hashOf: Int32Array = new Int32Array(1024);
  private head: Int32Array = new Int32Array(1024);
  private last: Int32Array = new Int32Array(1024);
  private uids = 0;
  /** Slot -> uid number + 1 (0: empty); at most half full. */
  private table: Int32Array = new Int32Array(2048);
  private bits = 11;
  private next: Int32Array = new Int32Array(4096);
  private codes: Int32Array = new Int32Array(4096);
  private positions: Uint32Array = new Uint32Array(4096);
  private entries = 0;

  /** Distinct uids. */
  get size(): number {
    return this.uids;
  }

  /** Entries (notifications) held. */
  get length(): number {
    return this.entries;
  }

  /** Makes room for this many more uids and entries in one step (open() of a long session). */
  reserve(moreUids: number, moreEntries: number): void {
    this.growUids(this.uids + moreUids);
    this.growEntries(this.entries + moreEntries);
  }

  /** Adds a text that uidIn() takes ranges of; returns its number. */
  addText(text: string): number {
    this.texts.push(text);
    return this.texts.length - 1;
  }

  /** Number of the uid whose characters are text[start, start + length), added if new. */
  uidIn(text: number, start: number, length: number): number {
    const t = this.texts[text]!;
    const hash = hashRange(t, start, length);
    const found = this.lookup(t, start, length, hash);
    if (found >= 0) return found;
    return this.insert(text, start, length, hash);
  }

  /** Number of `uid`, or -1 if it was never added. */
  find(uid: string): number {
    return this.lookup(uid, 0, uid.length, hashRange(uid, 0, uid.length));
  }

  /** Number of `uid`, added if new. */
  intern(uid: string): number {
    const hash = hashRange(uid, 0, uid.length);
    const found = this.lookup(uid, 0, uid.length, hash);
    if (found >= 0) return found;
    // a copy: a decoded uid may be a slice that keeps its whole message's text alive
    return this.insert(this.addText(ownCopy(uid)), 0, uid.length, hash);
  }

  /** The uid's place in the hash table, whatever its size (tableOrder of its name). */
  order(uid: number): number {
    return Math.imul(this.hashOf[uid]!, 0x9e3779b1) >>> 0;
  }

  name(uid: number): string {
    const start = this.startOf[uid]!;
    return this.texts[this.textOf[uid]!]!.slice(start, start + this.lengthOf[uid]!);
  }

  /** Appends (code, position) to uid's entries, unchecked (loading what was checked before). */
  add(uid: number, code: number, position: number): void {
    if (this.entries === this.next.length) this.growEntries(this.entries + 1);
    const e = this.entries++;
    this.codes[e] = code;
    this.positions[e] = position;
    this.next[e] = -1;
    const last = this.last[uid]!;
    if (last < 0) this.head[uid] = e;
    else this.next[last] = e;
    this.last[uid] = e;
  }

  /**
   * Appends `count` entries to uid's, unchecked: codes[from + k] at positions
   * base + offsets[from + k] (a run of a summary's uid-major arrays).
   */
  addRun(
    uid: number,
    codes: Uint32Array,
    offsets: Uint32Array,
    from: number,
    count: number,
    base: number,
  ): void {
    if (count === 0) return;
    if (this.entries + count > this.next.length) this.growEntries(this.entries + count);
    const e0 = this.entries;
    const next = this.next;
    const own = this.codes;
    const positions = this.positions;
    for (let k = 0; k < count; k++) {
      own[e0 + k] = codes[from + k]!;
      positions[e0 + k] = base + offsets[from + k]!;
      next[e0 + k] = e0 + k + 1;
    }
    next[e0 + count - 1] = -1;
    const last = this.last[uid]!;
    if (last < 0) this.head[uid] = e0;
    else next[last] = e0;
    this.last[uid] = e0 + count - 1;
    this.entries += count;
  }

  /** Appends (code, position) to uid's entries unless it holds `code` already; false if so. */
  claim(uid: number, code: number, position: number): boolean {
    for (let e = this.head[uid]!; e >= 0; e = this.next[e]!) {
      if (this.codes[e] === code) return false;
    }
    this.add(uid, code, position);
    return true;
  }

  /** Removes the newest entry, which must be uid's (claims are undone newest first). */
  unclaim(uid: number): void {
    const e = this.entries - 1;
    if (e < 0 || this.last[uid] !== e) throw new InternalError('uid-index-unclaim');
    this.entries--;
    let prev = -1;
    for (let p = this.head[uid]!; p !== e; p = this.next[p]!) prev = p;
    if (prev < 0) this.head[uid] = -1;
    else this.next[prev] = -1;
    this.last[uid] = prev;
  }

  /** Feed positions of uid's entries, ascending; none for -1. */
  positionsOf(uid: number): number[] {
    const out: number[] = [];
    if (uid < 0) return out;
    for (let e = this.head[uid]!; e >= 0; e = this.next[e]!) out.push(this.positions[e]!);
    return out;
  }

  /** Key codes of uid's entries, in feed order. */
  codesOf(uid: number): number[] {
    const out: number[] = [];
    for (let e = this.head[uid]!; e >= 0; e = this.next[e]!) out.push(this.codes[e]!);
    return out;
  }

  private lookup(t: string, start: number, length: number, hash: number): number {
    const mask = this.table.length - 1;
    for (let slot = spread(hash, this.bits); ; slot = (slot + 1) & mask) {
      const u = this.table[slot]! - 1;
      if (u < 0) return -1;
      if (this.hashOf[u] === hash && this.lengthOf[u] === length && this.same(u, t, start)) {
        return u;
      }
    }
  }

  /** Whether uid u's characters are t[start, start + u's length). */
  private same(u: number, t: string, start: number): boolean {
    const own = this.texts[this.textOf[u]!]!;
    const at = this.startOf[u]!;
    const length = this.lengthOf[u]!;
    // A whole string (a uid looked up or added by value): one native comparison.
    if (start === 0 && t.length === length) return own.startsWith(t, at);
    for (let i = 0; i < length; i++) {
      if (own.charCodeAt(at + i) !== t.charCodeAt(start + i)) return false;
    }
    return true;
  }

  private insert(text: number, start: number, length: number, hash: number): number {
    if (this.uids === this.head.length) this.growUids(this.uids + 1);
    const u = this.uids++;
    this.textOf[u] = text;
    this.startOf[u] = start;
    this.lengthOf[u] = length;
    this.hashOf[u] = hash;
    this.head[u] = -1;
    this.last[u] = -1;
    if (this.uids * 2 > this.table.length) this.rehash(this.uids);
    else this.place(u);
    return u;
  }

  private place(u: number): void {
    const mask = this.table.length - 1;
    let slot = spread(this.hashOf[u]!, this.bits);
    while (this.table[slot] !== 0) slot = (slot + 1) & mask;
    this.table[slot] = u + 1;
  }

  private rehash(uids: number): void {
    let bits = this.bits;
    while (2 ** bits < uids * 2) bits++;
    if (bits === this.bits) return;
    this.bits = bits;
    this.table = new Int32Array(2 ** bits);
    for (let u = 0; u < this.uids; u++) this.place(u);
  }

  private growUids(need: number): void {
    if (need <= this.head.length) {
      this.rehash(need);
      return;
    }
    const size = Math.max(need, Math.ceil(this.head.length * 1.5));
    this.textOf = resized(this.textOf, size);
    this.startOf = resized(this.startOf, size);
    this.lengthOf = resized(this.lengthOf, size);
    this.hashOf = resized(this.hashOf, size);
    this.head = resized(this.head, size);
    this.last = resized(this.last, size);
    this.rehash(need);
  }

  private growEntries(need: number): void {
    if (need <= this.next.length) return;
    const size = Math.max(need, Math.ceil(this.next.length * 1.5));
    this.next = resized(this.next, size);
    this.codes = resized(this.codes, size);
    const positions = new Uint32Array(size);
    positions.set(this.positions.subarray(0, this.entries));
    this.positions = positions;
  }
}

function resized(a: Int32Array, size: number): Int32Array {
  const b = new Int32Array(size);
  b.set(a.subarray(0, Math.min(a.length, size)));
  return b;
}

/** FNV-1a over UTF-16 code units. */
export function hashRange(t: string, start: number, length: number): number {
  let h = 0x811c9dc5 | 0;
  for (let i = start, end = start + length; i < end; i++) {
    h = Math.imul(h ^ t.charCodeAt(i), 0x01000193);
  }
  return h;
}

/**
 * The order of uids in the hash table, whatever its size: a uid's slot is the top bits of this
 * number (Fibonacci hashing). Uids added in this order fill the table front to back.
 */
export function tableOrder(uid: string): number {
  return Math.imul(hashRange(uid, 0, uid.length), 0x9e3779b1) >>> 0;
}

/** Slot of a hash in a table of 2^bits slots (Fibonacci hashing: the product's top bits). */
function spread(hash: number, bits: number): number {
  return Math.imul(hash, 0x9e3779b1) >>> (32 - bits);
}
