import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PilotManager } from '../../../src/client/pilot-manager';
import { runtimeOf } from '../../../src/client/runtime/runtime';
import { Session } from '../../../src/client/session';
import { TaskManager } from '../../../src/client/task-manager';
import type { AgentConfig, PilotDescription } from '../../../src/generated';
import { withTimeout } from '../../../src/lib/deferred';
import { slurmEnv } from '../../support/slurm';

const INTRUDER = path.resolve(__dirname, '../../support/intruder.js');
const asRoot = process.getuid?.() === 0;

interface Got {
  received: { what: string; bytes: number }[];
  sent: number;
  /** Most bytes one raw TCP connection got back. */
  rawMax: number;
  files: Record<string, string>;
}

/** Runs the intruder script as `uid` and returns what it reports. */
function intrude(uid: number, gid: number, planFile: string): Promise<Got> {
  const child = spawn(process.execPath, [INTRUDER, planFile], {
    uid,
    gid,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<Got>((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as Got) : reject(new Error(`intruder ${code}: ${err}`)),
    ),
  );
  return withTimeout(done, 60_000, 'the intruder').finally(() => child.kill('SIGKILL'));
}

/**
 * Another Unix user on the same machine, who can list every listening port and its owner
 * (/proc/net/tcp), tries each attack the trust issue measured against a live session on TCP,
 * with a local and (when the lab cluster is up) a Slurm pilot running tasks meanwhile.
 */
const title = `an intruder on the same machine (another Unix user)${asRoot ? '' : ' (skipped: creating a user needs root)'}`;
(asRoot ? describe : describe.skip)(title, () => {
  const user = `pfx${process.pid}`;
  let uid = 0;
  let gid = 0;
  let parent = '';
  let work = '';
  beforeAll(() => {
    execFileSync('useradd', [
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      '--user-group',
      user,
    ]);
    uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }));
    gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }));
    // the session's parent is readable by all, like a project directory: only the session's
    // own modes may protect it
    parent = mkdtempSync(path.join(os.tmpdir(), 'pf-intruded-'));
    chmodSync(parent, 0o755);
    work = mkdtempSync(path.join(os.tmpdir(), 'pf-intruder-'));
    chmodSync(work, 0o1777);
  });
  afterAll(() => {
    try {
      spawnSync('pkill', ['-KILL', '-u', user]); // nothing of the intruder's may outlive the test
      execFileSync('userdel', [user], { stdio: 'ignore' });
    } finally {
      rmSync(parent, { recursive: true, force: true });
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('runs no command, loses, cancels or leaks no task, and is counted refusing', async () => {
    const session = await Session.open({ dir: parent });
    try {
      const pmgr = new PilotManager(session, { shutdownGraceMs: 5_000 });
      const tmgr = new TaskManager(session);
      const descs: PilotDescription[] = [{ resource: 'local', cores: 2, runtimeMin: 5 }];
      const slurm = slurmEnv();
      if (slurm !== undefined) {
        Object.assign(process.env, slurm);
        descs.push({ resource: 'slurm', nodes: 1, runtimeMin: 5 });
      }
      const pilots = await pmgr.submitPilots(descs);
      tmgr.addPilots(pilots);
      await pmgr.waitPilots({ states: ['PMGR_ACTIVE'], timeoutMs: 60_000 });
      const forged: string[] = [];
      tmgr.onState((task, state) => {
        if (state === 'FAILED' || state === 'CANCELED' || task.uid.startsWith('intruder')) {
          forged.push(`${task.uid} ${state}`);
        }
      });
      // long tasks that are running while the intruder tries to cancel and forge them
      const victims = await tmgr.submitTasks(
        pilots.map((p) => ({
          executable: '/bin/sh',
          arguments: ['-c', 'sleep 6; echo victim'],
          pilot: p.uid,
        })),
      );
      await tmgr.waitTasks({ states: ['AGENT_EXECUTING'], timeoutMs: 30_000 });

      const configs = pilots.map(
        (p) =>
          JSON.parse(
            readFileSync(path.join(session.dir, p.uid, 'agent.json'), 'utf8'),
          ) as AgentConfig,
      );
      const addresses = [...new Set(configs.flatMap((c) => Object.values(c.addresses)))];
      const marker = path.join(work, 'pwned');
      const plan = {
        session: session.uid,
        pilots: pilots.map((p) => p.uid),
        victims: victims.map((t) => t.uid),
        serverKey: configs[0]!.curve!.serverKey,
        addresses,
        marker,
        listenMs: 2_000,
        files: [
          session.dir,
          ...['journal.jsonl', 'session.key', 'client.log', 'store.log'].map((f) =>
            path.join(session.dir, f),
          ),
          ...pilots.map((p) => path.join(session.dir, p.uid, 'agent.json')),
        ],
      };
      const planFile = path.join(work, 'plan.json');
      writeFileSync(planFile, JSON.stringify(plan), { mode: 0o644 });
      // tasks keep flowing while the intruder is at it: none may be lost or stolen
      const during = tmgr.submitTasks(
        Array.from({ length: 200 }, (_, i) => ({
          executable: '/bin/echo',
          arguments: [`legit-${i}`],
        })),
      );
      const got = await intrude(uid, gid, planFile);
      const legit = await during;
      await tmgr.waitTasks({ timeoutMs: 60_000 });

      expect(got.received).toEqual([]);
      expect(got.rawMax).toBeLessThanOrEqual(64); // a ZMTP greeting at most, never data
      expect(Object.values(got.files).every((code) => code === 'EACCES')).toBe(true);
      expect(existsSync(marker)).toBe(false);
      expect(forged).toEqual([]);
      for (const t of victims) {
        expect(t.state).toBe('DONE');
        expect(t.stdout).toBe('victim\n');
      }
      legit.forEach((t, i) => {
        expect(t.state).toBe('DONE');
        expect(t.stdout).toBe(`legit-${i}\n`);
      });
      // the pilots were neither shut down nor shrunk to zero cores by forged control messages
      const after = await tmgr.submitTasks(
        pilots.map((p) => ({ executable: '/bin/true', pilot: p.uid })),
      );
      await tmgr.waitTasks({ uids: after.map((t) => t.uid), timeoutMs: 30_000 });
      expect(after.map((t) => t.state)).toEqual(after.map(() => 'DONE'));
      expect(pilots.map((p) => p.state)).toEqual(pilots.map(() => 'PMGR_ACTIVE'));
      // every CURVE attempt with the intruder's own key was refused by the ZAP handler
      const refusals = runtimeOf(session).refusals();
      expect(refusals.connections).toBeGreaterThanOrEqual(addresses.length);
      process.stderr.write(
        `intruder refused: ${JSON.stringify({ ...refusals, sent: got.sent })}\n`,
      );
    } finally {
      await session.close();
    }
  }, 240_000);
});
