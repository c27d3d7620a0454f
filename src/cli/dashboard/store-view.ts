import * as path from 'node:path';
import type { Labels, Notification, SessionStatus, TaskDescription } from '../../generated';
import { buildProfile, type SessionFacts } from '../../profile/build';
import { readNotifications, readSessionFacts } from '../../profile/read';
import type { Profile, TaskProfile } from '../../profile/types';
import type { ListedTask } from '../../service/routes/task-list';
import { eventText } from '../../service/event-feed';
import { ask } from '../control-client';
import { explainProfile, journalLife, profileStatus, stateOf } from '../session-info';

/** At most this often the store is read again while the session may still write it. */
const LOOK_MS = 1_000;

/** A task as the store tells it: its profile and, from the journal, its description. */
export interface StoredTask {
  seq: number;
  profile: TaskProfile;
  description: TaskDescription | undefined;
}

/**
 * A session as its store and journal tell it, read-only (`pilotfish dashboard`): what the
 * dashboard's routes answer for a session no `pilotfish serve` holds, one a script runs or one
 * that ended. Read again at most once a second while the session has not ended, never after.
 */
export class StoreView {
  private notifications: Notification[] = [];
  private facts: SessionFacts = { tasks: new Map(), pilots: new Map() };
  private profile: Profile | undefined;
  private tasks: StoredTask[] = [];
  private byUid = new Map<string, StoredTask>();
  private readAt = 0;
  private reading: Promise<void> | undefined;
  private ended = false;
  private readonly waiters = new Set<() => void>();

  constructor(readonly dir: string) {}

  get session(): string {
    return path.basename(this.dir);
  }

  /** The store read again, where it may have changed and was not read within LOOK_MS. */
  async fresh(): Promise<void> {
    if (this.profile !== undefined && (this.ended || Date.now() - this.readAt < LOOK_MS)) return;
    this.reading ??= this.read().finally(() => (this.reading = undefined));
    await this.reading;
  }

  private async read(): Promise<void> {
    // ended before the read: what the read finds is all there will be
    const ended = journalLife(this.dir).state === 'ended';
    const notifications = await readNotifications(this.dir);
    this.facts = readSessionFacts(this.dir);
    this.readAt = Date.now();
    this.profile = buildProfile(this.session, notifications, this.facts, this.readAt);
    this.tasks = this.profile.tasks.map((t, seq) => ({
      seq,
      profile: t,
      description: this.facts.tasks.get(t.uid),
    }));
    this.byUid = new Map(this.tasks.map((t) => [t.profile.uid, t]));
    const grew = notifications.length > this.notifications.length;
    this.notifications = notifications;
    this.ended = ended;
    if (grew) for (const w of [...this.waiters]) w();
  }

  all(): readonly StoredTask[] {
    return this.tasks;
  }

  task(uid: string): StoredTask | undefined {
    return this.byUid.get(uid);
  }

  latest(): number {
    return this.notifications.length;
  }

  async timelineProfile(): Promise<Profile> {
    await this.fresh();
    return this.profile!;
  }

  /**
   * Live through its control socket where a client holds it, else from the store as last read
   * (the profile fresh() keeps: the store is not read again for each status).
   */
  async status(limits: { pending?: number; running?: number }): Promise<SessionStatus> {
    const reply = await ask(this.dir, { op: 'status', ...limits });
    if (reply?.ok === true) return reply.result;
    await this.fresh();
    const st = profileStatus(this.dir, journalLife(this.dir).state, this.profile!, limits);
    const failures: Record<string, number> = {};
    for (const t of this.tasks) {
      const a = t.profile.attempts.at(-1);
      if (stateOf(t.profile) === 'FAILED' && a?.reason !== undefined) {
        failures[a.reason.code] = (failures[a.reason.code] ?? 0) + 1;
      }
    }
    return { ...st, failures };
  }

  /**
   * The text of every event after store position `from`, as the service's stream sends it
   * (the same ids: positions in the store), then those to come, until `signal` aborts.
   */
  async *events(from: number, signal: AbortSignal): AsyncGenerator<string> {
    let pos = from;
    while (!signal.aborted) {
      await this.fresh();
      if (this.notifications.length > pos) {
        let text = '';
        for (let i = pos; i < this.notifications.length; i++) {
          text += eventText(i + 1, this.notifications[i]!);
        }
        pos = this.notifications.length;
        yield text;
        continue;
      }
      if (this.ended) {
        await new Promise<void>((ok) => signal.addEventListener('abort', () => ok()));
        return;
      }
      await new Promise<void>((ok) => {
        const done = (): void => {
          clearTimeout(timer);
          this.waiters.delete(done);
          ok();
        };
        const timer = setTimeout(done, LOOK_MS);
        this.waiters.add(done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}

/** A stored task's summary, as GET /v1/tasks lists one (TaskSummary). */
export function storedSummary(t: StoredTask): Record<string, unknown> {
  const p = t.profile;
  const a = p.attempts.at(-1);
  const state = stateOf(p);
  return {
    uid: p.uid,
    ...(p.name !== undefined ? { name: p.name } : {}),
    state,
    attempt: a?.attempt ?? 1,
    ...(a?.pilot !== undefined ? { pilot: a.pilot } : {}),
    ...(a?.reason !== undefined && state !== 'DONE' ? { reason: a.reason } : {}),
    ...(typeof a?.exitCode === 'number' ? { exitCode: a.exitCode } : {}),
  };
}

/** A stored task on its own (TaskDetail): every state it passed with its real time. */
export function storedDetail(t: StoredTask): Record<string, unknown> {
  const final = t.profile.attempts.at(-1)?.final !== undefined;
  const history = t.profile.attempts.flatMap((a) => {
    const states = a.states.map((s) => ({
      state: s.state,
      attempt: a.attempt,
      inferred: false,
      ts: s.ts,
    }));
    if (a.final !== undefined && !a.states.some((s) => s.state === a.final)) {
      states.push({ state: a.final, attempt: a.attempt, inferred: true } as (typeof states)[0]);
    }
    return states;
  });
  return {
    ...storedSummary(t),
    final,
    description: t.description ?? {},
    history,
    ...(!final ? { explanation: explainProfile(t.profile) } : {}),
  };
}

/** How GET /v1/tasks reads a stored task. */
export const STORED_TASKS: ListedTask<StoredTask> = {
  seq: (t) => t.seq,
  uid: (t) => t.profile.uid,
  state: (t) => stateOf(t.profile),
  name: (t) => t.profile.name,
  pilot: (t) => t.profile.attempts.at(-1)?.pilot,
  reasonCode: (t) => t.profile.attempts.at(-1)?.reason?.code,
  labels: (t): Labels | undefined => t.description?.labels,
  summary: storedSummary,
};
