import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type {
  CancelResult,
  ControlReply,
  SessionStatus,
} from '../../../src/client/control/protocol';
import type { Explanation } from '../../../src/client/tasks/explain';
import { Session } from '../../../src/client/session';
import { withTimeout } from '../../../src/lib/deferred';
import { CLI, runCli } from '../../support/cli';
import { agentPids, clientChild, killAgents, type ClientChild } from '../../support/client-child';
import { waitForExit } from '../../support/processes';

const CHILD = path.resolve(__dirname, '../../support/control-child.js');
const asRoot = process.getuid?.() === 0;

interface Ready {
  session: string;
  dir: string;
  quick: string;
  bad: string;
  long: string[];
  waiting: string[];
}

/** Sends raw lines on a session's control socket and resolves with the reply lines. */
function raw(dir: string, data: string | Buffer, replies: number): Promise<ControlReply[]> {
  return withTimeout(
    new Promise<ControlReply[]>((resolve, reject) => {
      const socket = connect(path.join(dir, 'control.sock'));
      const got: ControlReply[] = [];
      const lines = createInterface({ input: socket });
      lines.on('line', (l) => {
        got.push(JSON.parse(l) as ControlReply);
        if (got.length === replies) {
          socket.destroy();
          resolve(got);
        }
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(got));
      socket.write(data);
    }),
    30_000,
    'control socket replies',
  );
}

/** Runs the CLI until `check(result)` holds (each run is a real process), or fails. */
async function until(args: string[], check: (stdout: string) => boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await runCli(args);
    if (check(r.stdout)) return r;
    if (Date.now() > deadline) throw new Error(`pilotfish ${args.join(' ')}: ${r.stdout}`);
  }
}

const json = <T>(s: string): T => JSON.parse(s) as T;

describe('pilotfish status, explain, cancel, sessions, clean on a live session, then an ended one', () => {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'pf-cli-control-'));
  chmodSync(parent, 0o755); // readable by all, like a project directory
  let child: ClientChild;
  let s: Ready;
  beforeAll(async () => {
    child = clientChild(CHILD, [parent], process.env);
    s = (await child.next('the live session', 120_000)) as Ready;
  }, 150_000);
  afterAll(() => {
    child.proc.kill('SIGKILL');
    killAgents(parent);
    rmSync(parent, { recursive: true, force: true });
  });
  const dirArgs = (): string[] => ['--dir', parent];

  it('status --json: pilots, counts per state, running tasks, the oldest pending explained', async () => {
    const r = await runCli(['status', s.session, '--json', ...dirArgs()]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const st = json<SessionStatus>(r.stdout);
    expect(st).toMatchObject({ session: s.session, state: 'live', total: 7, runningTotal: 2 });
    expect(st.pilots).toMatchObject([{ uid: 'pilot.0000', state: 'PMGR_ACTIVE', cores: 2 }]);
    expect(st.counts).toMatchObject({ DONE: 1, FAILED: 1, AGENT_EXECUTING: 2 });
    expect(st.running.map((t) => t.uid).sort()).toEqual([...s.long].sort());
    expect(st.pending.map((e) => e.uid)).toEqual(s.waiting);
    expect(st.pendingTotal).toBe(3);
    // the newest session is the default, and people get the same facts
    const text = await runCli(['status', ...dirArgs()]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/\(live, pid \d+\)/);
    expect(text.stdout).toMatch(/running: 2/);
    expect(text.stdout).toMatch(new RegExp(`pending: 3\\n  ${s.waiting[0]} \\(waiting\\)`));
  }, 60_000);

  it('explain: a waiting task, an ended one with its reason, an unknown uid (exit 1)', async () => {
    const w = await runCli(['explain', s.session, s.waiting[0]!, '--json', ...dirArgs()]);
    expect(w.code).toBe(0);
    const e = json<Explanation>(w.stdout);
    expect(e).toMatchObject({ uid: s.waiting[0], name: 'waiting', attempt: 1 });
    expect(e.state).not.toMatch(/AGENT_EXECUTING|DONE|FAILED|CANCELED/);
    const bad = await runCli(['explain', s.session, s.bad, ...dirArgs()]);
    expect(bad.code).toBe(0);
    expect(bad.stdout).toMatch(new RegExp(`^${s.bad} \\(bad\\) FAILED .*E_EXIT_CODE`));
    const none = await runCli(['explain', s.session, 'task.999999', ...dirArgs()]);
    expect([none.code, none.stdout]).toEqual([1, '']);
    expect(none.stderr).toMatch(/no task 'task.999999'/);
  }, 60_000);

  it("the socket is its owner's alone: mode 0600 in a 0700 directory", () => {
    expect(statSync(path.join(s.dir, 'control.sock')).mode & 0o777).toBe(0o600);
    expect(statSync(s.dir).mode & 0o777).toBe(0o700);
  });

  (asRoot ? it : it.skip)(
    'another user cannot connect, even through an open directory',
    () => {
      const user = `pfc${process.pid}`;
      execFileSync('useradd', [
        '--no-create-home',
        '--shell',
        '/usr/sbin/nologin',
        '--user-group',
        user,
      ]);
      try {
        const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }));
        const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }));
        const probe = (): string =>
          spawnSync(
            process.execPath,
            [
              '-e',
              `require('net').connect(process.argv[1])
              .on('connect', () => { console.log('CONNECTED'); process.exit(0); })
              .on('error', (e) => { console.log(e.code); process.exit(0); })`,
              path.join(s.dir, 'control.sock'),
            ],
            { uid, gid, encoding: 'utf8', timeout: 30_000 },
          ).stdout.trim();
        expect(probe()).toBe('EACCES'); // the session directory (0700)
        chmodSync(s.dir, 0o755);
        try {
          expect(probe()).toBe('EACCES'); // the socket itself (0600)
        } finally {
          chmodSync(s.dir, 0o700);
        }
      } finally {
        spawnSync('pkill', ['-KILL', '-u', user]);
        execFileSync('userdel', [user], { stdio: 'ignore' });
      }
    },
    60_000,
  );

  it('a malformed request gets an error reply naming what is wrong; the session goes on', async () => {
    const replies = await raw(
      s.dir,
      [
        'not json',
        JSON.stringify({ id: 1, op: 'cancel', uids: [1] }),
        JSON.stringify({ id: 2, op: 'frobnicate' }),
        JSON.stringify({ id: 3, op: 'status', pending: -1 }),
        JSON.stringify({ id: 4, op: 'status', pending: 0 }),
      ].join('\n') + '\n',
      5,
    );
    expect(replies[0]).toMatchObject({ ok: false, error: { code: 'E_BAD_JSON' } });
    expect(replies[1]).toMatchObject({
      id: 1,
      ok: false,
      error: { code: 'E_VALIDATION', issues: [{ path: '/uids/0', message: 'must be string' }] },
    });
    expect(replies[2]).toMatchObject({ id: 2, ok: false, error: { code: 'E_VALIDATION' } });
    expect(replies[2]).toMatchObject({
      error: {
        issues: [
          { path: '/op', message: 'must be one of "status", "explain", "cancel", "sandbox"' },
        ],
      },
    });
    expect(replies[3]).toMatchObject({
      id: 3,
      ok: false,
      error: { issues: [{ path: '/pending' }] },
    });
    expect(replies[4]).toMatchObject({ id: 4, ok: true, result: { state: 'live', total: 7 } });
    // many at once (blank lines between them skipped): each answered, in order
    const many = Array.from({ length: 200 }, (_, i) =>
      JSON.stringify({ id: i, op: 'explain', uid: s.quick }),
    );
    const answered = await raw(s.dir, many.join('\n\n') + '\n', 200);
    expect(answered.map((r) => [r.id, r.ok])).toEqual(many.map((_, i) => [i, true]));
    // a line over the limit is refused without being held, and the connection closed
    const big = await raw(s.dir, Buffer.alloc(5 * 1024 * 1024, 0x61), 1);
    expect(big).toMatchObject([{ ok: false, error: { code: 'E_TOO_LARGE' } }]);
    const r = await runCli(['status', s.session, '--json', ...dirArgs()]);
    expect(json<SessionStatus>(r.stdout)).toMatchObject({ state: 'live', runningTotal: 2 });
  }, 60_000);

  it('sessions --json lists it live with its task counts', async () => {
    const r = await runCli(['sessions', '--json', ...dirArgs()]);
    expect(r.code).toBe(0);
    const list = json<{ sessions: { uid: string; state: string; tasks: number }[] }>(r.stdout);
    expect(list.sessions).toMatchObject([{ uid: s.session, state: 'live', tasks: 7 }]);
  }, 60_000);

  it('cancel: exit 1 naming unknown and ended uids, the others canceled; clean leaves a live session', async () => {
    const r = await runCli([
      'cancel',
      s.session,
      s.long[0]!,
      'task.999999',
      s.quick,
      '--json',
      ...dirArgs(),
    ]);
    expect(r.code).toBe(1);
    expect(json<CancelResult>(r.stdout)).toEqual({
      canceled: [s.long[0]],
      unknown: ['task.999999'],
      final: [s.quick],
    });
    await until(
      ['explain', s.session, s.long[0]!, '--json', ...dirArgs()],
      (out) => json<Explanation>(out).state === 'CANCELED',
    );
    const again = await runCli(['cancel', s.session, s.long[0]!, ...dirArgs()]);
    expect([again.code, again.stdout]).toEqual([1, `already ended: ${s.long[0]}\n`]);
    const clean = await runCli(['clean', '--crashed', '--json', ...dirArgs()]);
    expect(json<{ removed: unknown[] }>(clean.stdout).removed).toEqual([]);
    expect(existsSync(s.dir)).toBe(true);
    // named, it is kept too, and said so
    const named = await runCli(['clean', s.session, '--crashed', ...dirArgs()]);
    expect([named.code, named.stderr]).toEqual([
      1,
      `pilotfish: kept ${s.session}: live: its client answers on its control socket\n`,
    ]);
    expect(existsSync(s.dir)).toBe(true);
  }, 120_000);

  it('status --watch: a line per change off a terminal, redrawn on one; both end with the session', async () => {
    const args = ['status', s.session, '--watch', '--interval', '0.2', ...dirArgs()];
    const watch = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    // the same on a terminal: script(1) gives it a pseudo-terminal
    const onTty = spawn(
      'script',
      ['-qfec', [process.execPath, CLI, ...args].join(' '), '/dev/null'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let screen = '';
    onTty.stdout.on('data', (d: Buffer) => (screen += d.toString()));
    const lines: string[] = [];
    const rl = createInterface({ input: watch.stdout });
    rl.on('line', (l) => lines.push(l));
    // checked again on each line of the one and each output of the other
    const seen = (what: string, ok: () => boolean): Promise<void> => {
      let check = (): void => undefined;
      return withTimeout(
        new Promise<void>((resolve) => {
          check = (): void => (ok() ? resolve() : undefined);
          rl.on('line', check);
          onTty.stdout.on('data', check);
          check();
        }),
        60_000,
        what,
      ).finally(() => {
        rl.off('line', check);
        onTty.stdout.off('data', check);
      });
    };
    const exited = (p: typeof watch): Promise<number | null> =>
      new Promise((resolve) => p.once('exit', resolve));
    const exits = [exited(watch), exited(onTty)];
    try {
      await seen('a live watch line', () =>
        lines.some((l) => / live tasks=7 .*AGENT_EXECUTING=1 /.test(l)),
      );
      await seen('a live screen', () => /\(live, pid \d+\)/.test(screen));
      child.proc.kill('SIGTERM'); // the client closes its session
      expect(await child.next('the close')).toEqual({ closed: true });
      expect(await withTimeout(Promise.all(exits), 60_000, 'the watches to end')).toEqual([0, 0]);
    } finally {
      watch.kill('SIGKILL');
      onTty.kill('SIGKILL');
    }
    expect(lines.at(-1)).toMatch(/ ended tasks=7 DONE=4 FAILED=1 CANCELED=2 \| pilot.0000=DONE$/);
    expect(new Set(lines.map((l) => l.replace(/^\S+ /, ''))).size).toBe(lines.length);
    const screens = screen.split('\x1b[H\x1b[2J');
    expect(screens.length).toBeGreaterThan(2); // redrawn, each time whole
    expect(screens.at(-1)).toMatch(/^session \S+ \(ended\)\r?\n/);
    expect(existsSync(path.join(s.dir, 'control.sock'))).toBe(false);
  }, 120_000);

  it('once ended: status and explain read the store, cancel exits 4, sessions says ended', async () => {
    const st = json<SessionStatus>(
      (await runCli(['status', s.session, '--json', ...dirArgs()])).stdout,
    );
    expect(st).toMatchObject({
      state: 'ended',
      total: 7,
      counts: { DONE: 4, FAILED: 1, CANCELED: 2 },
    });
    // the session's close ended its pilot: it served to the end, DONE
    expect(st.pilots).toMatchObject([{ uid: 'pilot.0000', state: 'DONE', cores: 2 }]);
    const e = await runCli(['explain', s.session, s.bad, '--json', ...dirArgs()]);
    expect(json<Explanation>(e.stdout)).toMatchObject({
      uid: s.bad,
      state: 'FAILED',
      reason: { code: 'E_EXIT_CODE' },
    });
    const none = await runCli(['explain', s.session, 'task.999999', ...dirArgs()]);
    expect(none.code).toBe(1);
    const c = await runCli(['cancel', s.session, s.waiting[0]!, ...dirArgs()]);
    expect([c.code, c.stdout]).toEqual([4, '']);
    expect(c.stderr).toMatch(/is not live/);
    const list = await runCli(['sessions', '--json', ...dirArgs()]);
    expect(json<{ sessions: unknown[] }>(list.stdout).sessions).toMatchObject([
      { uid: s.session, state: 'ended', tasks: 7, counts: { CANCELED: 2 } },
    ]);
  }, 60_000);

  it('clean --dry-run says what it would remove; clean removes it and says the space freed', async () => {
    const dry = await runCli(['clean', '--dry-run', '--json', ...dirArgs()]);
    const plan = json<{
      dryRun: boolean;
      removed: { uid: string; bytes: number }[];
      bytes: number;
    }>(dry.stdout);
    expect(plan).toMatchObject({ dryRun: true, removed: [{ uid: s.session }] });
    expect(plan.bytes).toBeGreaterThan(0);
    expect(existsSync(s.dir)).toBe(true);
    const young = await runCli(['clean', '--older-than', '1', ...dirArgs()]);
    expect([young.code, young.stdout]).toEqual([0, 'removed 0 sessions, 0 B freed\n']);
    const r = await runCli(['clean', ...dirArgs()]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^removed ${s.session} \\(ended, .*\\)\\nremoved 1 session, .* freed\\n$`),
    );
    expect(existsSync(s.dir)).toBe(false);
  }, 60_000);
});

describe('a session whose client died', () => {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'pf-cli-crashed-'));
  afterAll(() => {
    killAgents(parent);
    rmSync(parent, { recursive: true, force: true });
  });

  it('is crashed (its socket answers nobody), cancel exits 4, clean keeps it; resume replaces the socket', async () => {
    const child = clientChild(CHILD, [parent], process.env);
    let s: Ready;
    try {
      s = (await child.next('the live session', 120_000)) as Ready;
    } finally {
      child.proc.kill('SIGKILL');
    }
    await child.exit;
    // its agent works on (until its client timeout): not even --crashed removes the session
    const working = await runCli(['clean', '--crashed', '--dir', parent]);
    expect(working.stdout).toBe('removed 0 sessions, 0 B freed\n');
    killAgents(parent);
    for (const pid of agentPids(parent)) await waitForExit(pid, 30_000);
    expect(existsSync(path.join(s.dir, 'control.sock'))).toBe(true); // left behind
    const args = ['--dir', parent];
    const st = json<SessionStatus>((await runCli(['status', s.session, '--json', ...args])).stdout);
    expect(st).toMatchObject({ state: 'crashed', total: 7 });
    const c = await runCli(['cancel', s.session, s.long[0]!, ...args]);
    expect(c.code).toBe(4);
    const clean = await runCli(['clean', ...args]);
    expect(clean.stdout).toBe('removed 0 sessions, 0 B freed\n');
    const crashed = await runCli(['clean', '--crashed', '--dry-run', ...args]);
    expect(crashed.stdout).toMatch(new RegExp(`^would remove ${s.session} \\(crashed, `));
    const e = await runCli(['explain', s.session, s.long[0]!, '--json', ...args]);
    // (not its pilot: the client's own notification naming it may be lost with the client)
    expect(json<Explanation>(e.stdout)).toMatchObject({ uid: s.long[0], state: 'AGENT_EXECUTING' });
    const list = json<{ sessions: unknown[] }>(
      (await runCli(['sessions', '--json', ...args])).stdout,
    );
    expect(list.sessions).toMatchObject([{ uid: s.session, state: 'crashed' }]);

    const session = await Session.open({ dir: parent, resume: s.session });
    try {
      const live = await runCli(['status', s.session, '--json', ...args]);
      expect(json<SessionStatus>(live.stdout)).toMatchObject({ state: 'live', pid: process.pid });
    } finally {
      await session.close();
    }
    const ended = await runCli(['sessions', '--json', ...args]);
    expect(json<{ sessions: unknown[] }>(ended.stdout).sessions).toMatchObject([
      { state: 'ended' },
    ]);
  }, 240_000);
});

describe('help of the session commands', () => {
  it.each(['status', 'cancel', 'explain', 'sessions', 'clean'])(
    '%s --help prints its usage and exit statuses, exit 0',
    async (cmd) => {
      const r = await runCli([cmd, '--help']);
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(r.stdout).toMatch(new RegExp(`^Usage: pilotfish ${cmd} `));
      expect(r.stdout).toMatch(/exit status:\n {2}0 /);
      expect(r.stdout).toMatch(/--json/);
    },
  );

  it('no such session: a message and exit 2', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-cli-none-'));
    try {
      for (const args of [['status'], ['explain', 'pf.20260101.000000.abcdef', 'task.000000']]) {
        const r = await runCli([...args, '--dir', dir]);
        expect([r.code, r.stdout]).toEqual([2, '']);
        expect(r.stderr).toMatch(/^pilotfish: no session/);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
