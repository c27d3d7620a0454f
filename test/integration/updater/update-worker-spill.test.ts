import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Notification } from '../../../src/generated';
import { deferred } from '../../../src/lib/deferred';
import { notificationKey } from '../../../src/states/notification';
import {
  EmbeddedStore,
  StoreServer,
  UpdateWorker,
  type UpdateWorkerOptions,
} from '../../../src/updater';
import { ForwardingStore, makeNotes, RecordingLogger, waitForCount } from './helpers';

/**
 * A real embedded store whose appends wait until `release()`: a store that is away (a MongoDB
 * outage, a full disk) as the UpdateWorker sees it, batches unacknowledged. Records each
 * append as it was asked for, in order.
 */
class WithholdingStore extends ForwardingStore {
  readonly asked: Notification[][] = [];
  private readonly gate = deferred<void>();

  override async append(batch: Notification[]): Promise<number> {
    this.asked.push(batch);
    await this.gate.promise;
    return this.inner.append(batch);
  }
  release(): void {
    this.gate.resolve();
  }
}

const LINKS = ['its own store', 'a StoreServer'] as const;

describe('UpdateWorker spilling to disk while its store withholds acks', () => {
  let dir: string;
  let spillDir: string;
  let store: EmbeddedStore;
  let withholding: WithholdingStore;
  let server: StoreServer | undefined;
  let log: RecordingLogger;
  const workers: UpdateWorker[] = [];

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-uw-spill-'));
    spillDir = path.join(dir, 'sandbox');
    fs.mkdirSync(spillDir);
    store = await EmbeddedStore.open(path.join(dir, 'store'));
    withholding = new WithholdingStore(store);
    log = new RecordingLogger();
  });

  afterEach(async () => {
    withholding.release();
    for (const w of workers.splice(0)) await w.close();
    await server?.close();
    server = undefined;
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const start = async (
    link: (typeof LINKS)[number],
    opts: Partial<UpdateWorkerOptions> = {},
  ): Promise<UpdateWorker> => {
    const to =
      link === 'its own store'
        ? { store: withholding }
        : {
            storeAddress: (server = await StoreServer.start(withholding, {
              session: 's',
              logger: log,
            })).endpoint,
          };
    const w = UpdateWorker.start({
      ...to,
      session: 's',
      logger: log,
      name: 'pilot.0000.uw0',
      batchSize: 100,
      maxInFlight: 8,
      // no re-send while the test holds the acks: what the store is asked is each batch once
      ackTimeoutMs: 60_000,
      spill: { dir: spillDir, memoryLimit: 1_000 },
      ...opts,
    });
    workers.push(w);
    return w;
  };

  /** Hands `notes` over as a process does (a bulk per turn), and the most it held meanwhile. */
  const hand = (w: UpdateWorker, notes: Notification[]): number => {
    let most = 0;
    for (let i = 0; i < notes.length; i += 100) {
      w.take(notes.slice(i, i + 100));
      most = Math.max(most, w.stats().held);
    }
    return most;
  };

  it.each(LINKS)(
    'through %s: holds at most its limit in memory, spills the rest, then delivers each once in order',
    async (link) => {
      const w = await start(link);
      const notes = makeNotes(20_000);
      expect(hand(w, notes)).toBeLessThanOrEqual(1_000);
      expect(w.stats()).toMatchObject({ received: 20_000, inFlight: 8, held: 1_000 });
      expect(w.stats().spilled).toBe(20_000 - 8 * 100 - 1_000);
      const file = w.spillFile!;
      expect(path.dirname(file)).toBe(spillDir);
      expect(path.basename(file)).toMatch(/^updates-spill\.pilot\.0000\.uw0\.[0-9a-f]{8}$/);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);

      withholding.release();
      await waitForCount(store, notes.length, 30_000);
      // each batch asked once, in the order handed over; stored once each
      expect(withholding.asked.flat()).toEqual(notes);
      expect(store.size).toBe(notes.length);
      expect(new Set((await store.history()).map(notificationKey)).size).toBe(notes.length);
      expect(fs.readdirSync(spillDir)).toEqual([]);
      await w.close();
      expect(w.stats()).toMatchObject({
        acked: 20_000,
        givenUp: 0,
        inFlight: 0,
        held: 0,
        spilled: 0,
      });
    },
    40_000,
  );

  it('keeps in memory what it cannot spill, says why once, and loses nothing', async () => {
    // a directory under a regular file: ENOTDIR, for root too (CI), where chmod stops nothing
    const blocker = path.join(dir, 'not-a-directory');
    fs.writeFileSync(blocker, '');
    const w = await start('its own store', {
      spill: { dir: path.join(blocker, 'spill'), memoryLimit: 1_000 },
    });
    const notes = makeNotes(20_000);
    hand(w, notes);
    expect(w.stats()).toMatchObject({ inFlight: 8, held: 20_000 - 800, spilled: 0 });
    const warned = log.entries.filter((e) => e.level === 'warn');
    expect(warned.map((e) => e.message)).toEqual([
      'cannot spill notifications to disk: they stay in memory',
    ]);
    expect(warned[0]!.meta).toMatchObject({ errno: 'ENOTDIR', path: w.spillFile });

    withholding.release();
    await waitForCount(store, notes.length, 30_000);
    expect(withholding.asked.flat()).toEqual(notes);
    await w.close();
    expect(w.stats()).toMatchObject({ acked: 20_000, givenUp: 0, held: 0 });
  });

  it('closing while the store is still away gives up what is in flight, held and spilled, and removes the file', async () => {
    const w = await start('its own store');
    hand(w, makeNotes(20_000));
    const file = w.spillFile!;
    expect(fs.existsSync(file)).toBe(true);
    await w.close(100);
    // what was in memory went for the last wait; the file was never read back whole
    expect(w.stats()).toMatchObject({
      givenUp: 20_000,
      givenUpUnsent: 20_000 - 800 - 1_000,
      acked: 0,
      held: 0,
      spilled: 0,
    });
    const closing = log.entries.find((e) => e.message === 'closing with unacknowledged batches');
    expect(closing?.meta).toMatchObject({ batches: 18, notifications: 1_800, spilled: 18_200 });
    expect(fs.existsSync(file)).toBe(false);
  });

  it('closing drains the spill file within its wait when the store answers', async () => {
    const w = await start('its own store');
    const notes = makeNotes(20_000);
    hand(w, notes);
    withholding.release();
    await w.close(30_000);
    expect(w.stats()).toMatchObject({ acked: 20_000, givenUp: 0, spilled: 0 });
    expect(withholding.asked.flat()).toEqual(notes);
    expect(store.size).toBe(notes.length);
    expect(fs.readdirSync(spillDir)).toEqual([]);
  });
});
