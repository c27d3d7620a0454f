import {
  WIDE_KEY,
  type SegmentSummary,
  type SummaryRecords,
  type WideKeys,
} from './segment-summary';

/** What SummaryBuilder.build needs to know of the uids it was given by number. */
export interface SummaryUids {
  name(uid: number): string;
  /** The uid's place in the uid index's hash table, as a u32 (see tableOrder). */
  order(uid: number): number;
}

/**
 * Collects a segment's summary while it is written (or scanned): its records and, per
 * notification in feed order, the uid (by the caller's number for it) and the key code.
 * build() groups them by uid. The hot path (add) only writes two numbers.
 */
export class SummaryBuilder {
  private entryUid: Uint32Array = new Uint32Array(1024);
  private entryKey: Uint32Array = new Uint32Array(1024);
  private n = 0;
  private readonly wide: { at: number; kind: number; state: number; attempt: number }[] = [];
  private readonly recs: number[] = [];

  constructor(
    readonly segment: number,
    /** Feed position of the segment's first notification. */
    readonly first: number,
  ) {}

  /** Notifications added so far. */
  get notifications(): number {
    return this.n;
  }

  /** Records added so far. */
  get records(): number {
    return this.recs.length / 4;
  }

  /** Record i as [offset, payload length, count, crc]. */
  record(i: number): [number, number, number, number] {
    const r = this.recs;
    return [r[i * 4]!, r[i * 4 + 1]!, r[i * 4 + 2]!, r[i * 4 + 3]!];
  }

  addRecord(offset: number, length: number, count: number, crc: number): void {
    this.recs.push(offset, length, count, crc);
  }

  /**
   * The next notification of the segment: its uid's number and its key, as the packKey code
   * when it packs (>= 0), else by its parts (state by number).
   */
  add(uid: number, code: number, kind: number, attempt: number, state: number): void {
    if (this.n === this.entryUid.length) {
      this.entryUid = grow(this.entryUid);
      this.entryKey = grow(this.entryKey);
    }
    if (code < 0) {
      this.wide.push({ at: this.n, kind, state, attempt });
      this.entryKey[this.n] = WIDE_KEY;
    } else {
      this.entryKey[this.n] = code;
    }
    this.entryUid[this.n++] = uid;
  }

  /** The summary of the segment as added: `states` names the state numbers used. */
  build(segmentBytes: number, states: readonly string[], uids: SummaryUids): SegmentSummary {
    const N = this.n;
    // Local uid numbers (+1; 0: not in this segment), in order of first sight.
    let maxUid = -1;
    for (let i = 0; i < N; i++) maxUid = Math.max(maxUid, this.entryUid[i]!);
    const localOf = new Uint32Array(maxUid + 1);
    const globals: number[] = [];
    for (let i = 0; i < N; i++) {
      const uid = this.entryUid[i]!;
      if (localOf[uid] === 0) {
        globals.push(uid);
        localOf[uid] = globals.length;
      }
    }
    const U = globals.length;
    // The summary's uid order: by the top 16 bits of their place in the uid index's hash
    // table (counting sort), so that open() fills that table front to back rather than at
    // random (far fewer cache misses).
    const bucket = new Uint32Array(U);
    const bucketStart = new Uint32Array(65_537);
    for (let u = 0; u < U; u++) {
      const b = uids.order(globals[u]!) >>> 16;
      bucket[u] = b;
      bucketStart[b + 1]!++;
    }
    for (let b = 0; b < 65_536; b++) bucketStart[b + 1]! += bucketStart[b]!;
    const rank = new Uint32Array(U);
    for (let u = 0; u < U; u++) rank[u] = bucketStart[bucket[u]!]!++;
    const entryLocal = new Uint32Array(N);
    for (let i = 0; i < N; i++) entryLocal[i] = rank[localOf[this.entryUid[i]!]! - 1]!;
    const sorted = new Array<string>(U);
    for (let u = 0; u < U; u++) sorted[rank[u]!] = uids.name(globals[u]!);
    const uidCounts = new Uint32Array(U);
    for (let i = 0; i < N; i++) uidCounts[entryLocal[i]!]!++;
    // Counting sort by uid; stable, so positions stay ascending within a uid.
    const startOf = new Uint32Array(U);
    for (let u = 1; u < U; u++) startOf[u] = startOf[u - 1]! + uidCounts[u - 1]!;
    const keys = new Uint32Array(N);
    const positions = new Uint32Array(N);
    const sortedAt = new Uint32Array(N);
    for (let i = 0; i < N; i++) {
      const slot = startOf[entryLocal[i]!]!++;
      keys[slot] = this.entryKey[i]!;
      positions[slot] = i;
      sortedAt[i] = slot;
    }
    const W = this.wide.length;
    const wide: WideKeys = {
      at: new Uint32Array(W),
      kinds: new Uint32Array(W),
      states: new Uint32Array(W),
      attempts: new Float64Array(W),
    };
    this.wide.forEach((w, i) => {
      wide.at[i] = sortedAt[w.at]!;
      wide.kinds[i] = w.kind;
      wide.states[i] = w.state;
      wide.attempts[i] = w.attempt;
    });
    const R = this.records;
    const records: SummaryRecords = {
      offsets: new Uint32Array(R),
      lengths: new Uint32Array(R),
      counts: new Uint32Array(R),
      crcs: new Uint32Array(R),
    };
    for (let i = 0; i < R; i++) {
      records.offsets[i] = this.recs[i * 4]!;
      records.lengths[i] = this.recs[i * 4 + 1]!;
      records.counts[i] = this.recs[i * 4 + 2]!;
      records.crcs[i] = this.recs[i * 4 + 3]!;
    }
    const uidStarts = new Uint32Array(U + 1);
    for (let u = 0; u < U; u++) uidStarts[u + 1] = uidStarts[u]! + sorted[u]!.length;
    return {
      segment: this.segment,
      segmentBytes,
      first: this.first,
      notifications: N,
      records,
      states: [...states],
      uidText: sorted.join(''),
      uidStarts,
      uidCounts,
      keys,
      positions,
      wide,
    };
  }
}

function grow(a: Uint32Array): Uint32Array {
  const bigger = new Uint32Array(a.length * 2);
  bigger.set(a);
  return bigger;
}
