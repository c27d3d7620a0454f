import { afterAll, beforeAll, afterEach, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { withTimeout } from '../../../src/lib/deferred';
import { agentPids, killAgents } from '../../support/client-child';
import { CLI, runCli, startCli } from '../../support/cli';
import { waitForExit } from '../../support/processes';
import { removeMongoSession } from '../../support/mongodb';
import { parseMongoUri } from '../../../src/updater/mongodb/uri';
import { lines } from '../../support/file-lines';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { leakedProcesses } = require('../../support/leaks') as {
  leakedProcesses: (mark: string) => { pid: number; cmd: string }[];
};

/** Control characters other than newline and tab: what a terminal would take as commands. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/; // eslint-disable-line no-control-regex

/** A workload whose tasks append their uid to `log` (so a task that ran twice shows). */
function appenders(file: string, log: string, n: number, sleepS: number, cores = 2): void {
  const line = `echo "$PF_TASK_ID" >> ${log}; sleep ${sleepS}`;
  writeFileSync(
    file,
    JSON.stringify({
      pilots: [{ resource: 'local', cores }],
      tasks: Array.from({ length: n }, () => ({
        executable: '/bin/sh',
        arguments: ['-c', line],
      })),
    }),
  );
}

describe('pilotfish run, stopped and resumed', () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const r of roots.splice(0)) {
      killAgents(r); // a test that failed midway
      rmSync(r, { recursive: true, force: true });
    }
  });
  const root = (): string => {
    const r = mkdtempSync(path.join(os.tmpdir(), 'pf-run-stop-'));
    roots.push(r);
    return r;
  };

  it('a run killed with SIGKILL midway and resumed ends with every task DONE, none run twice', async () => {
    const dir = root();
    const [file, log] = [path.join(dir, 'w.json'), path.join(dir, 'ran')];
    appenders(file, log, 40, 0.2);
    const first = startCli(['run', file, '--dir', dir]);
    const [, uid] = await first.stderrMatch(/session (pf\.\S+) /);
    await lines(log, 8); // midway: some tasks ran, most did not
    first.proc.kill('SIGKILL');
    expect((await first.result).signal).toBe('SIGKILL');
    const saved = path.join(dir, uid!, 'workload.json');
    expect(statSync(saved).mode & 0o777).toBe(0o600);

    const r = await runCli(['run', '--resume', uid!, '--dir', dir]);
    expect(r.code).toBe(0);
    // its rate counts the tasks that ended in it, not those the killed run saw end
    expect(r.stdout).toMatch(
      new RegExp(`^session ${uid!.replace(/\./g, '\\.')}: 40 tasks(, \\d+ ended)? in`),
    );
    expect(r.stdout).toMatch(/^ {2}DONE\s+40$/m);
    const ran = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    expect(ran).toHaveLength(40);
    expect(new Set(ran).size).toBe(40);
    for (const pid of agentPids(dir)) await waitForExit(pid, 10_000);
  }, 120_000);

  it('SIGINT: says so, cancels what runs, ends the pilots, prints the summary, exit 130, nothing left', async () => {
    const dir = root();
    const [file, log] = [path.join(dir, 'w.json'), path.join(dir, 'ran')];
    appenders(file, log, 6, 300);
    const run = startCli(['run', file, '--dir', dir]);
    await lines(log, 2); // both cores run a task
    // a session has one client: no resume while its run lives
    const [, live] = await run.stderrMatch(/session (pf\.\S+) /);
    const second = await runCli(['run', '--resume', live!, '--dir', dir]);
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/cannot resume pf\.\S+: pilotfish run \(pid \d+\) still runs it/);
    run.proc.kill('SIGINT');
    const r = await run.result;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(
      /SIGINT: stopping: canceling the tasks not ended, then ending the pilots/,
    );
    expect(r.stdout).toMatch(/^interrupted by SIGINT: /m);
    expect(r.stdout).toMatch(/^ {2}CANCELED\s+6$/m);
    expect(r.stderr).not.toMatch(CONTROL);
    const uid = /session (pf\.\S+) /.exec(r.stderr)![1]!;
    const pids = agentPids(dir);
    expect(pids).toHaveLength(1);
    for (const pid of pids) await waitForExit(pid, 10_000);
    expect(leakedProcesses(process.env.PILOTFISH_TEST_MARK!)).toEqual([]);
    expect(readdirSync(dir)).toContain(uid);
  }, 120_000);

  it('a second SIGINT leaves at once saying how to resume; the resumed run reports the end of every task', async () => {
    const dir = root();
    const [file, log] = [path.join(dir, 'w.json'), path.join(dir, 'ran')];
    appenders(file, log, 4, 300, 1);
    const run = startCli(['run', file, '--dir', dir]);
    await lines(log, 1);
    run.proc.kill('SIGINT');
    await run.stderrMatch(/SIGINT: stopping/);
    run.proc.kill('SIGINT');
    const r = await run.result;
    expect(r.code).toBe(130);
    const [, uid, sessions] =
      /SIGINT again: leaving now.*pilotfish run --resume (\S+) --dir (\S+)$/m.exec(r.stderr)!;
    expect(sessions).toBe(dir);
    const again = await runCli(['run', '--resume', uid!, '--dir', sessions!]);
    // the first run had canceled what had not ended when it left: those stay canceled, and the
    // resumed run sees each of them to its end
    // its rate counts what it saw end (the first run's cancels may have ended before it began)
    expect(again.stdout).toMatch(
      /^session \S+: 4 tasks(, [0-3] ended)? in \S+ s \([\d.]+ tasks\/s\)$/m,
    );
    expect(again.stdout).toMatch(/^ {2}CANCELED\s+4$/m);
    expect(again.code).toBe(1);
    for (const pid of agentPids(dir)) await waitForExit(pid, 10_000);
  }, 120_000);

  it('resume of an unknown session is a usage error', async () => {
    const r = await runCli(['run', '--resume', 'pf.20200101.000000.abcdef', '--dir', root()]);
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toMatch(/no session 'pf\.20200101\.000000\.abcdef'/);
    const both = await runCli(['run', 'w.json', '--resume', 'x']);
    expect(both.code).toBe(2);
  });

  it('on a terminal: a bar redrawn in place, in colour; then the summary', async () => {
    const dir = root();
    const file = path.join(dir, 'w.json');
    writeFileSync(
      file,
      JSON.stringify({
        pilots: [{ resource: 'local', cores: 2 }],
        tasks: Array.from({ length: 20 }, () => ({ executable: '/bin/true' })),
      }),
    );
    // script(1) runs the command on a pseudo-terminal: stdout and stderr are a TTY
    const cmd = `'${process.execPath}' '${CLI}' run '${file}' --dir '${dir}'`;
    const tty = spawn('script', ['-qec', cmd, '/dev/null'], {
      // FORCE_COLOR: a terminal takes colours, also where CI is set (Node then assumes none)
      env: { ...process.env, TERM: 'xterm-256color', FORCE_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    tty.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await withTimeout(
      new Promise((resolve) => tty.on('close', resolve)),
      60_000,
      'run on a terminal',
    );
    expect(code).toBe(0);
    expect(out).toContain('\x1b[1G'); // back to the line's start: redrawn in place
    expect(out).toContain('20/20 | \x1b[32mdone 20\x1b[0m | running 0');
    expect(out).toMatch(/DONE\s+20/);
  }, 90_000);
});

const MONGO_URI = process.env['PILOTFISH_MONGODB_URI'];
const withMongo = MONGO_URI !== undefined && MONGO_URI !== '';

(withMongo ? describe : describe.skip)(
  withMongo
    ? 'pilotfish run on MongoDB, resumed where its directory is not (PILOTFISH_MONGODB_URI)'
    : 'pilotfish run on MongoDB, resumed where its directory is not (skipped: PILOTFISH_MONGODB_URI is not set; no MongoDB server can be installed here)',
  () => {
    // made when the tests run: a skipped describe still runs its body, never its afterAll
    let dir = '';
    let uid: string | undefined;
    beforeAll(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'pf-run-stop-mongo-'));
    });
    afterAll(async () => {
      killAgents(dir);
      if (uid !== undefined) {
        await removeMongoSession(MONGO_URI!, parseMongoUri(MONGO_URI!).db, uid);
      }
      rmSync(dir, { recursive: true, force: true });
    });

    it('a run killed with SIGKILL and its directory removed is taken up from the database: every task DONE, none run twice', async () => {
      const [file, log] = [path.join(dir, 'w.json'), path.join(dir, 'ran')];
      appenders(file, log, 40, 0.2);
      // the pilot's sandbox outside the session's directory, which is removed
      const w = JSON.parse(readFileSync(file, 'utf8')) as { pilots: object[] };
      w.pilots = [{ resource: 'local', cores: 2, sandbox: path.join(dir, 'pilot') }];
      writeFileSync(file, JSON.stringify(w));
      const env = { ...process.env, PILOTFISH_STORE: MONGO_URI };
      const first = startCli(['run', file, '--dir', dir], env);
      [, uid] = await first.stderrMatch(/session (pf\.\S+) /);
      await lines(log, 8);
      first.proc.kill('SIGKILL');
      expect((await first.result).signal).toBe('SIGKILL');
      rmSync(path.join(dir, uid!), { recursive: true });

      const r = await startCli(['run', '--resume', uid!, '--dir', dir], env).result;
      expect([r.code, r.stderr]).toEqual([0, expect.any(String)]);
      expect(r.stdout).toMatch(/^ {2}DONE\s+40$/m);
      const ran = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      expect(ran).toHaveLength(40);
      expect(new Set(ran).size).toBe(40);
      // made again from the database: 0700, the workload without its store
      expect(statSync(path.join(dir, uid!)).mode & 0o777).toBe(0o700);
      for (const pid of agentPids(dir)) await waitForExit(pid, 10_000);
    }, 180_000);
  },
);
