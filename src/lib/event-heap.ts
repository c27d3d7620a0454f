/**
 * A min-heap of (time, payload) events over typed arrays, so a million pending events cost
 * about 16 bytes each and no object. Ties in time come out in insertion order (a sequence
 * number breaks them), which keeps a simulation deterministic.
 */
export class EventHeap {
  private time = new Float64Array(1024);
  private seq = new Float64Array(1024);
  private payload = new Int32Array(1024);
  private n = 0;
  private pushed = 0;

  get size(): number {
    return this.n;
  }

  /** The time of the earliest event (undefined when empty). */
  peekTime(): number | undefined {
    return this.n > 0 ? this.time[0] : undefined;
  }

  push(t: number, payload: number): void {
    if (this.n === this.time.length) this.grow();
    let i = this.n++;
    const s = this.pushed++;
    // sift up
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(t, s, p)) break;
      this.move(p, i);
      i = p;
    }
    this.time[i] = t;
    this.seq[i] = s;
    this.payload[i] = payload;
  }

  /** Removes the earliest event and returns its payload (the heap must not be empty). */
  pop(): number {
    const top = this.payload[0]!;
    const last = --this.n;
    if (last > 0) {
      const t = this.time[last]!;
      const s = this.seq[last]!;
      const v = this.payload[last]!;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= last) break;
        const r = l + 1;
        const c = r < last && this.lessAt(r, l) ? r : l;
        if (!this.lessThan(c, t, s)) break;
        this.move(c, i);
        i = c;
      }
      this.time[i] = t;
      this.seq[i] = s;
      this.payload[i] = v;
    }
    return top;
  }

  /** Drops every event. */
  clear(): void {
    this.n = 0;
  }

  /** A copy, to take events out of in order while this one keeps them (arrays copied whole). */
  clone(): EventHeap {
    const c = new EventHeap();
    c.time = this.time.slice(0, Math.max(this.n, 1));
    c.seq = this.seq.slice(0, Math.max(this.n, 1));
    c.payload = this.payload.slice(0, Math.max(this.n, 1));
    c.n = this.n;
    c.pushed = this.pushed;
    return c;
  }

  /** Whether (t, s) comes before the entry at i. */
  private before(t: number, s: number, i: number): boolean {
    const u = this.time[i]!;
    return t < u || (t === u && s < this.seq[i]!);
  }

  /** Whether the entry at i comes before (t, s). */
  private lessThan(i: number, t: number, s: number): boolean {
    const u = this.time[i]!;
    return u < t || (u === t && this.seq[i]! < s);
  }

  private lessAt(i: number, j: number): boolean {
    return this.lessThan(i, this.time[j]!, this.seq[j]!);
  }

  private move(from: number, to: number): void {
    this.time[to] = this.time[from]!;
    this.seq[to] = this.seq[from]!;
    this.payload[to] = this.payload[from]!;
  }

  private grow(): void {
    const cap = this.time.length * 2;
    const t = new Float64Array(cap);
    const s = new Float64Array(cap);
    const p = new Int32Array(cap);
    t.set(this.time);
    s.set(this.seq);
    p.set(this.payload);
    this.time = t;
    this.seq = s;
    this.payload = p;
  }
}
