import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { existsSync } from 'node:fs';
import { MongoClient } from 'mongodb';
import { readStoreChoice } from '../../../src/updater/store-choice';
import { removeMongoSessions } from '../../support/mongodb';
import { tempDirs } from '../../support/temp-dirs';

const DIST = path.join(__dirname, '../../../dist/examples');

/** The examples README and the user guide point at run as a user runs them, and say so. */
describe('examples', () => {
  const temp = tempDirs('pf-example-');

  const run = (
    file: string,
    env: NodeJS.ProcessEnv = process.env,
    cwd = temp.make(),
  ): Promise<{ code: number | null; out: string }> =>
    new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        [path.join(DIST, file)],
        { cwd, env, timeout: 120_000 },
        (err, stdout, stderr) =>
          resolve({ code: err === null ? 0 : (child.exitCode ?? -1), out: stdout + stderr }),
      );
    });

  it('skeleton.js ends with every task as expected', async () => {
    const { code, out } = await run('skeleton.js');
    expect([code, out]).toEqual([0, expect.stringContaining('all tasks ended as expected')]);
  }, 150_000);

  const uri = process.env['PILOTFISH_MONGODB_URI'];
  const withMongo = uri !== undefined && uri !== '';
  (withMongo ? it : it.skip)(
    withMongo
      ? 'skeleton.js with its store in MongoDB (PILOTFISH_MONGODB_URI): the same ends, every state in the database'
      : 'skeleton.js with its store in MongoDB (skipped: PILOTFISH_MONGODB_URI is not set; no MongoDB server can be installed here)',
    async () => {
      const cwd = temp.make();
      try {
        const { code, out } = await run(
          'skeleton.js',
          { ...process.env, PILOTFISH_STORE: uri },
          cwd,
        );
        expect([code, out]).toEqual([0, expect.stringContaining('all tasks ended as expected')]);
        const session = /session (\S+)/.exec(out)![1]!;
        const dir = path.join(cwd, '.pilotfish', session);
        // the notifications went to MongoDB, none to a file of the session
        expect(existsSync(path.join(dir, 'store.json'))).toBe(true);
        expect(existsSync(path.join(dir, 'store.log'))).toBe(false);
        const choice = readStoreChoice(dir);
        const client = new MongoClient(uri!);
        try {
          const notes = client
            .db(choice.kind === 'mongodb' ? choice.db : '')
            .collection('notifications');
          const done = await notes.countDocuments({ session, kind: 'task', state: 'DONE' });
          expect(done).toBe(1000);
        } finally {
          await client.close();
        }
      } finally {
        await removeMongoSessions(uri!, cwd);
      }
    },
    150_000,
  );

  it('inference-service.js serves 200 calls from its model', async () => {
    const { code, out } = await run('inference-service.js');
    expect([code, out]).toEqual([0, expect.stringContaining('all tasks ended as expected')]);
    expect(out).toMatch(/model serving at 127\.0\.0\.1:\d+/);
    expect(out).toContain('predictions: { positive: 133, negative: 67 }');
    expect(out).toContain('model DONE');
  }, 150_000);
});
