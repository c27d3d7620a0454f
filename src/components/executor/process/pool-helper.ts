/**
 * One spawner helper as SpawnerPool sees it: its conn (the pipes of a child, or an attached
 * helper's keep socket: helper-conn.ts), the tasks it runs, the requests waiting to go, its
 * event lines read, and the answers it owes (ready, status).
 */
import { errorMeta } from '../../../errors';
import { deferred, type Deferred } from '../../../lib/deferred';
import type { Logger } from '../../../lib/logger';
import type { ConnEvents, HelperConn } from './helper-conn';
import type { HelperEvent, HelperRequest, HelperStatus } from './helper/protocol';
import type { HelperTracking } from './pool-tracking';

/** Makes the conn of a helper, which calls `on` with what comes from it. */
export type OpenConn = (on: ConnEvents) => HelperConn;

/** What the pool does with what comes from a helper. */
export interface PoolHelperEvents {
  /** The events of one chunk read from it. */
  events(h: PoolHelper, events: HelperEvent[]): void;
  /** It is gone (`how`, in words). */
  closed(h: PoolHelper, how: string, code: number | null, signal: string | null): void;
}

export class PoolHelper {
  readonly conn: HelperConn;
  /** Its pid: a child's at once, an attached one's from its ready event (-1 until then). */
  pid: number;
  /** Reached through its keep socket (SpawnerPool.attach), not started by this pool. */
  readonly attached: boolean;
  /** uid -> pid (undefined until started) of every task this helper runs. */
  readonly tasks = new Map<string, number | undefined>();
  /** The errno and file of each running task whose frames its stream file lost. */
  readonly lost = new Map<string, { errno: string; file: string }>();
  alive = true;
  /** From its ready event. */
  tracking?: HelperTracking;
  readonly ready = deferred<void>();
  readonly closed = deferred<void>();
  private outbox: string[] = [];
  private partial = '';
  /** Status requests sent, answered in order. */
  private readonly statuses: Deferred<HelperStatus>[] = [];

  constructor(
    /** Its place in the pool (0..count-1), which a replacement takes. */
    readonly slot: number,
    /** Its stream file (streamDir). */
    readonly stream: string | undefined,
    open: OpenConn,
    on: PoolHelperEvents,
    private readonly log: Logger,
  ) {
    this.conn = open({
      data: (chunk) => on.events(this, this.read(chunk)),
      stderr: (text) => log.warn('spawner helper stderr', { pid: this.pid, text }),
      closed: (how, code, signal) => on.closed(this, how, code, signal),
    });
    this.pid = this.conn.pid ?? -1;
    this.attached = this.conn.pid === undefined;
    // only start() and attach() wait for readiness: a replacement that dies early is reported
    this.ready.promise.catch(() => undefined);
  }

  /** Queues a request; all requests of one synchronous run (a core handler) go in one write. */
  send(msg: HelperRequest): void {
    this.outbox.push(JSON.stringify(msg));
    if (this.outbox.length === 1) queueMicrotask(() => this.flush());
  }

  flush(): void {
    if (this.outbox.length === 0) return;
    const text = this.outbox.join('\n') + '\n';
    this.outbox = [];
    if (this.alive) this.conn.write(text);
  }

  /** Asks for its status (answered in order: answered()). */
  askStatus(): Promise<HelperStatus> {
    const d = deferred<HelperStatus>();
    this.statuses.push(d);
    this.send({ op: 'status' });
    return d.promise;
  }

  answered(ev: HelperStatus): void {
    this.statuses.shift()?.resolve(ev);
  }

  /** Its ready event; `refuse`: the pool's word on cgroups it was given and cannot use. */
  readied(
    ev: Extract<HelperEvent, { ev: 'ready' }>,
    refuse: (pid: number, why: string) => Error | undefined,
  ): void {
    this.pid = ev.pid;
    this.tracking = { kind: ev.tracking, markPrefix: ev.markPrefix };
    const refused = ev.why === undefined ? undefined : refuse(this.pid, ev.why);
    if (refused === undefined) this.ready.resolve();
    else this.ready.reject(refused);
  }

  /** Frames of a task were lost (before its exit): the first errno is kept for its exit. */
  lostFrames(ev: Extract<HelperEvent, { ev: 'lost' }>): void {
    if (!this.tasks.has(ev.uid)) {
      this.log.warn('output of an ended task lost', { pid: this.pid, ...ev });
    } else if (!this.lost.has(ev.uid)) {
      this.lost.set(ev.uid, { errno: ev.errno, file: ev.file ?? this.stream ?? '?' });
    }
  }

  /**
   * How to find what it left once dead: as it tracked; an attached one's cgroups are not under
   * this pool's base, so through /proc by its marks.
   */
  leftovers(): HelperTracking | undefined {
    return this.attached && this.tracking ? { ...this.tracking, kind: 'proc' } : this.tracking;
  }

  /** It is gone (`how`: its exit status, or its socket closed): what it owes will not come. */
  died(how: string): void {
    this.alive = false;
    const who = `spawner helper (pid ${this.pid})`;
    this.ready.reject(new Error(`${who} exited before it was ready (${how})`));
    for (const d of this.statuses.splice(0)) {
      d.reject(new Error(`${who} exited before its status (${how})`));
    }
  }

  /** The events of the whole lines in `chunk` (a cut one waits for its end). */
  private read(chunk: string): HelperEvent[] {
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop() ?? '';
    const events: HelperEvent[] = [];
    for (const line of lines) {
      if (line === '') continue;
      try {
        events.push(JSON.parse(line) as HelperEvent);
      } catch (e) {
        const meta = { pid: this.pid, line, ...errorMeta(e) };
        this.log.error('unreadable line from spawner helper', meta);
      }
    }
    return events;
  }
}
