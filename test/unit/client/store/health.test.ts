import { describe, expect, it } from '@jest/globals';
import {
  StoreHealth,
  type ReachSource,
  type WritableSource,
} from '../../../../src/client/store/health';
import { silentLogger } from '../../../../src/lib/logger';
import {
  StoreUnreachableError,
  StoreUnwritableError,
  type StoreCondition,
} from '../../../../src/updater/state-store';

// StoreHealth's own logic, with stand-ins for what it watches: a MongoDB store's reach (no
// server can run here) and the session's files (a full disk cannot be made here as root).

/** A store that loses its servers when told to, as MongoStore reports it. */
class Reach implements ReachSource {
  unreachable: StoreUnreachableError | undefined;
  private readonly listeners = new Set<(e: StoreUnreachableError | undefined) => void>();

  onUnreachable(listener: (e: StoreUnreachableError | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  lose(): StoreUnreachableError {
    const e = new StoreUnreachableError({
      hosts: ['127.0.0.1:1'],
      reason: 'connect ECONNREFUSED 127.0.0.1:1',
      since: 1,
    });
    this.tell((this.unreachable = e));
    return e;
  }

  find(): void {
    this.tell((this.unreachable = undefined));
  }

  private tell(e: StoreUnreachableError | undefined): void {
    for (const l of this.listeners) l(e);
  }
}

/** A file written synchronously (journal, counters): it holds what it could not write. */
class File implements WritableSource {
  unwritable: StoreUnwritableError | undefined;
  /** Whether the disk has room again (a retry then writes). */
  room = true;
  private readonly listeners = new Set<(e: StoreUnwritableError | undefined) => void>();

  constructor(readonly path: string) {}

  onUnwritable(listener: (e: StoreUnwritableError | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  fail(): StoreUnwritableError {
    this.room = false;
    const e = new StoreUnwritableError({ errno: 'ENOSPC', path: this.path, since: 1, held: 1 });
    this.tell((this.unwritable = e));
    return e;
  }

  retry(): boolean {
    if (!this.room) return false;
    if (this.unwritable !== undefined) this.tell((this.unwritable = undefined));
    return true;
  }

  private tell(e: StoreUnwritableError | undefined): void {
    for (const l of this.listeners) l(e);
  }
}

/** A MongoDB session's health as the runtime wires it: the store's reach, then its files. */
function mongoSession(): {
  health: StoreHealth;
  reach: Reach;
  journal: File;
  counters: File;
  heard: (StoreCondition | undefined)[];
} {
  const health = new StoreHealth(silentLogger);
  const reach = new Reach();
  const journal = new File('/s/journal.jsonl');
  const counters = new File('/s/delivered');
  health.watchReach(reach);
  health.watch(journal);
  health.watch(counters);
  const heard: (StoreCondition | undefined)[] = [];
  health.onChange((e) => heard.push(e));
  return { health, reach, journal, counters, heard };
}

describe('StoreHealth of a MongoDB session', () => {
  it('reports the store losing its servers and finding them again, refusing nothing', () => {
    const { health, reach, heard } = mongoSession();
    const lost = reach.lose();
    expect(heard).toEqual([lost]);
    expect(health.condition).toBe(lost);
    expect(health.error).toBeUndefined(); // what refuses work
    expect(() => health.check()).not.toThrow();
    reach.find();
    expect(heard).toEqual([lost, undefined]);
    expect(health.condition).toBeUndefined();
  });

  it('puts a file it cannot write before the unreachable store, and refuses work for it', () => {
    const { health, reach, journal, heard } = mongoSession();
    const lost = reach.lose();
    const full = journal.fail();
    expect(health.condition).toBe(full);
    expect(() => health.check()).toThrow(full);
    journal.room = true;
    journal.retry();
    expect(heard).toEqual([lost, full, lost]);
    expect(health.condition).toBe(lost);
  });

  it('retries its journal at each check (its first file, which no store retries)', () => {
    const { health, journal, counters, heard } = mongoSession();
    const full = journal.fail();
    counters.fail();
    expect(() => health.check()).toThrow(full);
    journal.room = true;
    counters.room = true;
    expect(() => health.check()).not.toThrow();
    expect(journal.unwritable).toBeUndefined();
    expect(counters.unwritable).toBeUndefined();
    expect(heard.at(-1)).toBeUndefined();
  });
});
