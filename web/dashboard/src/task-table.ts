// The tasks table: any number of rows (100,000 and more) in a scrolling view that holds only
// the rows in sight. Rows come from the server a block at a time by place among the tasks that
// match (GET /v1/tasks?offset=...); events repaint the rows in sight at once, and the blocks in
// sight are fetched again shortly after, for totals and for tasks that left or joined the filter.
import type { TaskPage, TaskSummary } from '../../../src/generated';
import { follow, getJson, type StreamEvent } from './api';
import { h, number, stateClass } from './dom';
import { movesOn } from './model';
import { afterPaint, perf } from './perf';

const ROW_H = 28;
const BLOCK = 200;
const OVERSCAN = 10;
/** How soon after a burst of events the rows in sight are fetched again (at most so often). */
const REFRESH_MS = 700;

interface Notice {
  kind: string;
  uid: string;
  attempt: number;
  state: string;
  ts: number;
}

export class TaskTable {
  readonly element: HTMLElement;
  private readonly scroller: HTMLDivElement;
  private readonly spacer: HTMLDivElement;
  private readonly summary: HTMLElement;
  private readonly blocks = new Map<number, TaskSummary[]>();
  private readonly loading = new Set<string>();
  private readonly rows: HTMLAnchorElement[] = [];
  private total = 0;
  private painted = false;
  private frame = 0;
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;
  private lastRefresh = 0;
  private readonly stop = new AbortController();
  private generation = 0;

  constructor(
    private readonly query: string,
    private readonly onFocusRow: (uid: string) => void = () => undefined,
  ) {
    this.summary = h('p', { class: 'table-summary', 'aria-live': 'polite' }, 'loading…');
    this.spacer = h('div', { class: 'spacer' });
    this.scroller = h(
      'div',
      { class: 'scroller', role: 'table', 'aria-label': 'tasks', tabindex: '0' },
      h(
        'div',
        { class: 'row head', role: 'row' },
        ...['uid', 'name', 'state', 'attempt', 'pilot', 'exit', 'reason'].map((c) =>
          h('span', { role: 'columnheader', class: `c-${c}` }, c),
        ),
      ),
      this.spacer,
    );
    this.scroller.addEventListener('scroll', () => this.schedule());
    this.scroller.addEventListener('keydown', (e) => this.key(e));
    window.addEventListener('resize', this.onResize);
    this.element = h('section', { class: 'task-table' }, this.summary, this.scroller);
  }

  private readonly onResize = (): void => this.schedule();

  /** Fetches the first block, paints, then follows the session's events from that page on. */
  async start(): Promise<void> {
    const page = await this.fetchBlock(0);
    if (page === undefined) return;
    this.paint();
    void follow(`/v1/events?from=${page.events ?? 0}`, (e) => this.onEvent(e), this.stop.signal);
  }

  close(): void {
    this.stop.abort();
    clearTimeout(this.refreshTimer);
    cancelAnimationFrame(this.frame);
    window.removeEventListener('resize', this.onResize);
  }

  private async fetchBlock(b: number): Promise<TaskPage | undefined> {
    const gen = this.generation;
    const key = `${gen}:${b}`; // a refresh asks again, whatever was asked before it
    if (this.loading.has(key)) return undefined;
    this.loading.add(key);
    try {
      const sep = this.query === '' ? '' : '&';
      const page = await getJson<TaskPage>(
        `/v1/tasks?${this.query}${sep}offset=${b * BLOCK}&limit=${BLOCK}`,
        this.stop.signal,
      );
      if (gen !== this.generation) {
        this.schedule(); // a refresh began since: its answer wins (asked for at the next paint)
        return undefined;
      }
      this.blocks.set(b, page.tasks);
      this.setTotal(page.total ?? page.tasks.length);
      this.schedule();
      return page;
    } catch (e) {
      if (!this.stop.signal.aborted) this.summary.textContent = `cannot list tasks: ${String(e)}`;
      return undefined;
    } finally {
      this.loading.delete(key);
    }
  }

  private setTotal(n: number): void {
    this.total = n;
    this.spacer.style.height = `${n * ROW_H}px`;
    this.scroller.setAttribute('aria-rowcount', String(n + 1));
    this.summary.textContent = `${number(n)} task${n === 1 ? '' : 's'}`;
  }

  private schedule(): void {
    if (this.frame !== 0) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.paint();
    });
  }

  private range(): [number, number] {
    const first = Math.max(0, Math.floor(this.scroller.scrollTop / ROW_H) - OVERSCAN);
    const seen = Math.ceil(this.scroller.clientHeight / ROW_H) + 2 * OVERSCAN;
    return [first, Math.min(this.total, first + seen)];
  }

  /** Places a row element for each task in sight; asks for the blocks not yet here. */
  private paint(): void {
    const [first, end] = this.range();
    let used = 0;
    for (let i = first; i < end; i++) {
      const b = Math.floor(i / BLOCK);
      const t = this.blocks.get(b)?.[i - b * BLOCK];
      if (t === undefined) {
        if (!this.blocks.has(b)) void this.fetchBlock(b);
        continue;
      }
      const row = this.rows[used] ?? this.newRow();
      this.fill(row, t, i);
      used++;
    }
    for (let k = used; k < this.rows.length; k++) this.rows[k]!.hidden = true;
    if (!this.painted && used > 0) {
      this.painted = true;
      afterPaint(() => (perf.tasksPaintedMs = performance.now()));
    }
    if (this.total === 0 && this.blocks.size > 0) this.summary.textContent = 'no tasks match';
  }

  private newRow(): HTMLAnchorElement {
    const row = h('a', { class: 'row', role: 'row' });
    for (const c of ['uid', 'name', 'state', 'attempt', 'pilot', 'exit', 'reason']) {
      row.append(h('span', { role: 'cell', class: `c-${c}` }));
    }
    row.addEventListener('focus', () => this.onFocusRow(row.dataset.uid ?? ''));
    this.spacer.append(row);
    this.rows.push(row);
    return row;
  }

  private fill(row: HTMLAnchorElement, t: TaskSummary, i: number): void {
    row.hidden = false;
    row.style.transform = `translateY(${i * ROW_H}px)`;
    row.dataset.uid = t.uid;
    row.dataset.index = String(i);
    row.href = `#/task/${encodeURIComponent(t.uid)}`;
    row.setAttribute('aria-rowindex', String(i + 2));
    const c = row.children;
    c[0]!.textContent = t.uid;
    c[1]!.textContent = t.name ?? '';
    c[2]!.textContent = t.state;
    c[2]!.className = `c-state ${stateClass(t.state)}`;
    c[3]!.textContent = String(t.attempt);
    c[4]!.textContent = t.pilot ?? '';
    c[5]!.textContent = t.exitCode === undefined ? '' : String(t.exitCode);
    c[6]!.textContent = t.reason === undefined ? '' : `${t.reason.code}: ${t.reason.message}`;
    row.title = c[6]!.textContent;
  }

  /** A notification: the row in sight repainted now; the blocks in sight fetched again soon. */
  private onEvent(e: StreamEvent): void {
    if (e.event !== 'task') return;
    const arrived = performance.now();
    const n = JSON.parse(e.data) as Notice;
    for (const row of this.rows) {
      if (row.hidden || row.dataset.uid !== n.uid) continue;
      const i = Number(row.dataset.index);
      const b = Math.floor(i / BLOCK);
      const block = this.blocks.get(b);
      const t = block?.[i - b * BLOCK];
      if (t === undefined || !movesOn(t, n)) break;
      const moved: TaskSummary = {
        ...t,
        state: n.state as TaskSummary['state'],
        attempt: n.attempt,
      };
      block![i - b * BLOCK] = moved;
      this.fill(row, moved, i);
      afterPaint(() => {
        perf.updatesMs.push(Date.now() - n.ts);
        perf.repaintMs.push(performance.now() - arrived);
      });
      break;
    }
    this.refreshSoon();
  }

  private refreshSoon(): void {
    if (this.refreshTimer !== undefined) return;
    const wait = Math.max(REFRESH_MS - (Date.now() - this.lastRefresh), 50);
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      this.lastRefresh = Date.now();
      // the blocks in sight again; the others are forgotten (fetched when scrolled to)
      const [first, end] = this.range();
      const keep = new Set<number>();
      for (let i = first; i < Math.max(end, first + 1); i += BLOCK) keep.add(Math.floor(i / BLOCK));
      keep.add(Math.floor(Math.max(end - 1, 0) / BLOCK));
      this.generation++;
      for (const b of [...this.blocks.keys()]) if (!keep.has(b)) this.blocks.delete(b);
      for (const b of keep) void this.fetchBlock(b);
    }, wait);
  }

  /** Up and down move between rows (the view follows); Enter opens one (the row is a link). */
  private key(e: KeyboardEvent): void {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    const at = document.activeElement as HTMLElement | null;
    const i = at?.dataset.index !== undefined ? Number(at.dataset.index) : -1;
    const next = Math.max(0, Math.min(this.total - 1, i + (e.key === 'ArrowDown' ? 1 : -1)));
    e.preventDefault();
    // row i lies below the header row, which stays at the top of the view
    const top = (next + 1) * ROW_H;
    if (top < this.scroller.scrollTop + ROW_H) this.scroller.scrollTop = top - ROW_H;
    else if (top + ROW_H > this.scroller.scrollTop + this.scroller.clientHeight) {
      this.scroller.scrollTop = top + ROW_H - this.scroller.clientHeight;
    }
    this.paint();
    this.rows.find((r) => !r.hidden && r.dataset.index === String(next))?.focus();
  }
}
