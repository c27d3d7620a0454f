import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import * as zmq from 'zeromq';
import type { StoreReply } from '../../../../src/generated';
import { withTimeout } from '../../../../src/lib/deferred';
import { parseStoreReply } from '../../../../src/lib/validate';
import { decode, encode } from '../../../../src/transport/codec';
import { EmbeddedStore, StoreServer } from '../../../../src/updater';
import { decodeNotifications, toTuples } from '../../../../src/updater/notification-codec';
import { scanRecords } from '../../../../src/updater/embedded/record';
import { makeNotes, RecordingLogger } from '../helpers';

describe('StoreServer', () => {
  let dir: string;
  let store: EmbeddedStore;
  let server: StoreServer;
  let dealer: zmq.Dealer;
  let log: RecordingLogger;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-server-'));
    store = await EmbeddedStore.open(dir);
    log = new RecordingLogger();
    server = await StoreServer.start(store, { session: 's', logger: log });
    dealer = new zmq.Dealer({ linger: 0 });
    dealer.connect(server.endpoint);
  });

  afterEach(async () => {
    dealer.close();
    await server.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const ask = async (frame: Buffer): Promise<StoreReply> => {
    await dealer.send(frame);
    const [reply] = await withTimeout(dealer.receive(), 5_000, 'store reply');
    return parseStoreReply(decode(reply!));
  };

  it('binds an ephemeral loopback port by default', () => {
    expect(server.endpoint).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);
  });

  it('answers an invalid request with ok:false and issues naming the path', async () => {
    const [note] = makeNotes(1);
    const reply = await ask(
      encode({ batch: 'b1', session: 's', notifications: [{ ...note, attempt: 0, extra: 1 }] }),
    );
    expect(reply).toMatchObject({ batch: 'b1', ok: false, error: { code: 'E_VALIDATION' } });
    expect(reply.error?.issues).toEqual(
      expect.arrayContaining([
        { path: '/notifications/0/attempt', message: 'must be >= 1' },
        { path: '/notifications/0', message: "must not have property 'extra'" },
      ]),
    );
    expect(log.entries).toContainEqual(
      expect.objectContaining({ level: 'warn', message: 'invalid store request' }),
    );
    expect(store.size).toBe(0);
  });

  it('answers a frame that is not msgpack, or has no batch id, with an empty batch id', async () => {
    const garbage = await ask(Buffer.from('not msgpack'));
    expect(garbage).toMatchObject({ batch: '', ok: false, error: { code: 'E_VALIDATION' } });
    expect(garbage.error?.issues).toEqual([
      { path: '/', message: 'must be a msgpack-encoded StoreRequest' },
    ]);
    const noBatch = await ask(encode({ session: 's', notifications: [] }));
    expect(noBatch).toMatchObject({ batch: '', ok: false });
    expect(noBatch.error?.issues).toEqual([
      { path: '/', message: "must have required property 'batch'" },
    ]);
  });

  it('replies ok:true once the batch is on disk, and accepted 0 for a re-sent batch', async () => {
    const notes = makeNotes(20);
    expect(await ask(encode({ batch: 'b2', session: 's', notifications: notes }))).toEqual({
      batch: 'b2',
      ok: true,
      accepted: 20,
    });
    // Read the file itself, as a fresh process would after a crash right after the reply.
    const onDisk = scanRecords(fs.readFileSync(path.join(dir, 'store.log')));
    expect(onDisk.tail).toBe('clean');
    expect(onDisk.payloads.flatMap((p) => decodeNotifications(p) as unknown[])).toEqual(notes);
    expect(await ask(encode({ batch: 'b2', session: 's', notifications: notes }))).toEqual({
      batch: 'b2',
      ok: true,
      accepted: 0,
    });
  });

  it('takes notifications as tuples, as UpdateWorkers send them, and names the path of a bad one', async () => {
    const notes = makeNotes(6);
    const tuples = toTuples(notes);
    expect(await ask(encode({ batch: 't1', session: 's', notifications: tuples }))).toEqual({
      batch: 't1',
      ok: true,
      accepted: 6,
    });
    expect(await store.history()).toEqual(notes);
    const bad = [...toTuples(makeNotes(2, 'x')), [0, 'u', 0, 999, 'late', 0]];
    const reply = await ask(encode({ batch: 't2', session: 's', notifications: bad }));
    expect(reply).toMatchObject({ batch: 't2', ok: false, error: { code: 'E_VALIDATION' } });
    expect(reply.error?.issues?.map((i) => i.path)).toEqual(
      expect.arrayContaining(['/notifications/2/attempt', '/notifications/2/ts']),
    );
    expect(store.size).toBe(6);
  });
});
