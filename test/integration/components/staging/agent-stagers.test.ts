import { afterEach, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AgentInputStagerShell } from '../../../../src/components/agent-input-stager/shell';
import { AgentOutputStagerShell } from '../../../../src/components/agent-output-stager/shell';
import type { Transfers } from '../../../../src/components/shared/transfers';
import type { Notification, StagingDirective, TaskRecord } from '../../../../src/generated';
import { systemClock } from '../../../../src/lib/clock';
import { withTimeout } from '../../../../src/lib/deferred';
import { silentLogger } from '../../../../src/lib/logger';
import { taskIn } from '../../../support/fixtures';
import { tmpfsPerTest, tmpfsUnavailable } from '../../../support/tmpfs';

/** What a shell hands on or ends: waits until the task leaves the shell one way or the other. */
function deps() {
  const notes: Notification[] = [];
  const forwarded: TaskRecord[] = [];
  const waiters: (() => void)[] = [];
  const wake = (): void => {
    for (const w of waiters.splice(0)) w();
  };
  return {
    deps: {
      notes: {
        send: (ns: readonly Notification[]) => {
          notes.push(...ns);
          wake();
        },
      },
      next: {
        send: (ts: TaskRecord[]) => {
          forwarded.push(...ts);
          wake();
          return Promise.resolve();
        },
      },
      log: silentLogger,
      clock: systemClock,
    },
    notes,
    forwarded,
    /** The task's last notification once it reached `state`. */
    reached: (uid: string, states: string[]): Promise<Notification> =>
      withTimeout(
        new Promise<Notification>((resolve) => {
          const check = (): void => {
            const n = notes.find((x) => x.uid === uid && states.includes(x.state));
            if (n !== undefined) resolve(n);
            else waiters.push(check);
          };
          check();
        }),
        10_000,
        `${uid} to reach ${states.join(' or ')}`,
      ),
  };
}

/** The in-test stand-in for the session's transfer service: copies files, records calls. */
class CopyingTransfers implements Transfers {
  readonly calls: string[] = [];
  fetch(task: string, clientPath: string, localPath: string) {
    this.calls.push(`fetch ${task} ${clientPath} ${localPath}`);
    return this.copy(clientPath, localPath);
  }
  send(task: string, localPath: string, clientPath: string) {
    this.calls.push(`send ${task} ${localPath} ${clientPath}`);
    return this.copy(localPath, clientPath);
  }
  private async copy(from: string, to: string) {
    const bytes = await fs.promises.readFile(from);
    await fs.promises.mkdir(path.dirname(to), { recursive: true });
    await fs.promises.writeFile(to, bytes, { mode: 0o600 });
    return { bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
  }
}

const mode = (p: string): number => fs.statSync(p).mode & 0o777;

describe('the agent stager shells perform staging directives on real files', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  /** A client dir and a pilot sandbox, with a few files in the client's. */
  function layout() {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-staging-'));
    dirs.push(root);
    const client = path.join(root, 'client');
    const pilot = path.join(root, 'pilot');
    fs.mkdirSync(path.join(client, 'tree', 'sub'), { recursive: true });
    fs.mkdirSync(pilot);
    fs.writeFileSync(path.join(client, 'in.txt'), 'input\n', { mode: 0o644 });
    fs.writeFileSync(path.join(client, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    fs.writeFileSync(path.join(client, 'tree', 'a'), 'a\n');
    fs.writeFileSync(path.join(client, 'tree', 'sub', 'b'), 'b\n');
    fs.symlinkSync('a', path.join(client, 'tree', 'to-a'));
    fs.writeFileSync(path.join(pilot, 'shared.db'), 'db\n');
    return { root, client, pilot };
  }

  function inputTask(uid: string, input: StagingDirective[]): TaskRecord {
    return taskIn('AGENT_STAGING_INPUT_PENDING', {
      uid,
      pilot: 'p',
      staging: { input, output: [] },
      description: { inputStaging: input },
    });
  }

  async function stageIn(pilot: string, task: TaskRecord, transfers?: Transfers) {
    const d = deps();
    const shell = new AgentInputStagerShell(d.deps, pilot, transfers);
    shell.core.onTasks([task]);
    const n = await d.reached(task.uid, ['AGENT_SCHEDULING_PENDING', 'FAILED', 'CANCELED']);
    return { n, sandbox: path.join(pilot, task.uid), ...d };
  }

  it('copies files (the owner alone, executables stay so) and trees, links and moves', async () => {
    const { client, pilot } = layout();
    fs.writeFileSync(path.join(client, 'moving'), 'm\n');
    const { n, sandbox } = await stageIn(
      pilot,
      inputTask('t1', [
        { source: `${client}/in.txt`, target: 'task://' },
        { source: `${client}/run.sh`, target: 'task://bin/run', action: 'copy' },
        { source: `${client}/tree`, target: 'task://deep/er/tree' },
        { source: 'pilot://shared.db', target: 'task://db', action: 'link' },
        { source: `${client}/moving`, target: 'task://inbox/', action: 'move' },
      ]),
    );
    expect(n.state).toBe('AGENT_SCHEDULING_PENDING');
    expect(fs.readFileSync(path.join(sandbox, 'in.txt'), 'utf8')).toBe('input\n');
    expect(mode(path.join(sandbox, 'in.txt'))).toBe(0o600);
    expect(mode(path.join(sandbox, 'bin', 'run'))).toBe(0o700);
    expect(mode(path.join(sandbox, 'bin'))).toBe(0o700);
    expect(mode(path.join(sandbox, 'deep', 'er'))).toBe(0o700);
    expect(fs.readFileSync(path.join(sandbox, 'deep/er/tree/sub/b'), 'utf8')).toBe('b\n');
    expect(mode(path.join(sandbox, 'deep/er/tree/sub'))).toBe(0o700);
    expect(fs.readlinkSync(path.join(sandbox, 'deep/er/tree/to-a'))).toBe('a');
    expect(fs.readlinkSync(path.join(sandbox, 'db'))).toBe(path.join(pilot, 'shared.db'));
    expect(fs.readFileSync(path.join(sandbox, 'inbox', 'moving'), 'utf8')).toBe('m\n');
    expect(fs.existsSync(path.join(client, 'moving'))).toBe(false);
  });

  it('replaces an existing target, and puts a source into an existing directory', async () => {
    const { client, pilot } = layout();
    const sandbox = path.join(pilot, 't1');
    fs.mkdirSync(path.join(sandbox, 'into'), { recursive: true });
    fs.writeFileSync(path.join(sandbox, 'old.txt'), 'old\n');
    // a link an earlier stage left: replacing the target must not write through it
    fs.symlinkSync(path.join(client, 'run.sh'), path.join(sandbox, 'linked'));
    const { n } = await stageIn(
      pilot,
      inputTask('t1', [
        { source: `${client}/in.txt`, target: 'task://old.txt' },
        { source: `${client}/in.txt`, target: 'task://into' },
        { source: `${client}/in.txt`, target: 'task://linked' },
      ]),
    );
    expect(n.state).toBe('AGENT_SCHEDULING_PENDING');
    expect(fs.readFileSync(path.join(sandbox, 'old.txt'), 'utf8')).toBe('input\n');
    expect(fs.readFileSync(path.join(sandbox, 'into', 'in.txt'), 'utf8')).toBe('input\n');
    expect(fs.lstatSync(path.join(sandbox, 'linked')).isFile()).toBe(true);
    expect(fs.readFileSync(path.join(client, 'run.sh'), 'utf8')).toBe('#!/bin/sh\n');
  });

  it('fails the task in AGENT_STAGING_INPUT naming the missing file; an optional one is skipped', async () => {
    const { client, pilot } = layout();
    const missing = `${client}/nope.txt`;
    const { n } = await stageIn(
      pilot,
      inputTask('t1', [
        { source: missing, target: 'task://', optional: true },
        { source: `${client}/in.txt`, target: 'task://' },
        { source: missing, target: 'task://' },
        { source: `${client}/tree`, target: 'task://never' },
      ]),
    );
    expect(n.state).toBe('FAILED');
    expect(n.detail?.reason).toEqual({
      code: 'E_STAGING',
      message: `inputStaging[2] (copy ${missing} -> task://): ${missing}: no such file or directory (ENOENT)`,
      component: 'AgentInputStager',
      detail: { directive: 2, path: missing, errno: 'ENOENT' },
    });
    const sandbox = path.join(pilot, 't1');
    expect(fs.existsSync(path.join(sandbox, 'in.txt'))).toBe(true);
    expect(fs.existsSync(path.join(sandbox, 'never'))).toBe(false); // stopped at the failure
  });

  it('fails a transfer on a pilot without transfers, and fetches through the seam with one', async () => {
    const { client, pilot } = layout();
    const directive = {
      source: `${client}/in.txt`,
      target: 'task://fetched/',
      action: 'transfer' as const,
    };
    const without = await stageIn(pilot, inputTask('t1', [directive]));
    expect(without.n.state).toBe('FAILED');
    expect(without.n.detail?.reason?.message).toBe(
      `inputStaging[0] (transfer ${client}/in.txt -> task://fetched/): ${client}/in.txt: transfer is not available on this pilot (ENOTSUP)`,
    );
    const transfers = new CopyingTransfers();
    const optional = { ...directive, source: `${client}/nope`, optional: true };
    const withIt = await stageIn(pilot, inputTask('t2', [directive, optional]), transfers);
    expect(withIt.n.state).toBe('AGENT_SCHEDULING_PENDING');
    const fetched = path.join(pilot, 't2', 'fetched', 'in.txt');
    expect(fs.readFileSync(fetched, 'utf8')).toBe('input\n');
    expect(transfers.calls).toEqual([
      `fetch t2 ${client}/in.txt ${fetched}`,
      `fetch t2 ${client}/nope ${path.join(pilot, 't2', 'fetched', 'nope')}`,
    ]);
  });

  async function stageOut(pilot: string, task: TaskRecord, transfers?: Transfers) {
    const d = deps();
    const shell = new AgentOutputStagerShell(d.deps, pilot, transfers);
    shell.core.onTasks([task]);
    const n = await d.reached(task.uid, ['TMGR_STAGING_OUTPUT_PENDING', 'FAILED', 'CANCELED']);
    return { n, ...d };
  }

  function outputTask(pilot: string, output: StagingDirective[], exitCode = 0): TaskRecord {
    const sandbox = path.join(pilot, 't1');
    fs.mkdirSync(sandbox, { recursive: true });
    fs.writeFileSync(path.join(sandbox, 'stdout'), 'out\n');
    fs.writeFileSync(path.join(sandbox, 'result.txt'), 'result\n');
    return taskIn('AGENT_STAGING_OUTPUT_PENDING', {
      uid: 't1',
      pilot: 'p',
      sandbox,
      exitCode,
      signal: null,
      staging: { input: [], output },
      description: { outputStaging: output },
    });
  }

  it('stages output back, and performs every directive even after one failed', async () => {
    const { client, pilot } = layout();
    const transfers = new CopyingTransfers();
    const task = outputTask(pilot, [
      { source: 'task://missing', target: `${client}/results/` },
      { source: 'task://result.txt', target: `${client}/results/` },
      { source: 'task://stdout', target: `${client}/sent/stdout.txt`, action: 'transfer' },
      { source: 'task://absent', target: `${client}/x`, optional: true },
    ]);
    const { n } = await stageOut(pilot, task, transfers);
    expect(n.state).toBe('FAILED');
    expect(n.detail).toMatchObject({ exitCode: 0, stdout: 'out\n', sandbox: task.sandbox });
    const missing = path.join(pilot, 't1', 'missing');
    expect(n.detail?.reason).toMatchObject({
      code: 'E_STAGING',
      component: 'AgentOutputStager',
      message: `outputStaging[0] (copy task://missing -> ${client}/results/): ${missing}: no such file or directory (ENOENT)`,
      detail: { directive: 0, path: missing, errno: 'ENOENT' },
    });
    expect(fs.readFileSync(`${client}/results/result.txt`, 'utf8')).toBe('result\n');
    expect(fs.readFileSync(`${client}/sent/stdout.txt`, 'utf8')).toBe('out\n');
    expect(transfers.calls).toEqual([
      `send t1 ${path.join(pilot, 't1', 'stdout')} ${client}/sent/stdout.txt`,
    ]);
  });

  it('hands back a task that exited non-zero with its results and the failed directives', async () => {
    const { client, pilot } = layout();
    const task = outputTask(
      pilot,
      [
        { source: 'task://result.txt', target: `${client}/r.txt`, action: 'move' },
        { source: 'task://core', target: `${client}/core` },
      ],
      4,
    );
    const { n, forwarded } = await stageOut(pilot, task);
    expect(n.state).toBe('TMGR_STAGING_OUTPUT_PENDING');
    expect(fs.readFileSync(`${client}/r.txt`, 'utf8')).toBe('result\n');
    expect(forwarded[0]?.staging?.problems).toEqual([
      expect.objectContaining({ directive: 1, errno: 'ENOENT' }),
    ]);
  });

  const onTmpfs = tmpfsUnavailable === undefined ? it : it.skip;
  const mount = tmpfsPerTest('1m');
  onTmpfs(
    `moves across file systems by copy and removal${tmpfsUnavailable === undefined ? '' : ` (skipped: ${tmpfsUnavailable})`}`,
    async () => {
      const { client } = layout();
      const pilot = mount().dir;
      const { n, sandbox } = await stageIn(
        pilot,
        inputTask('t1', [{ source: `${client}/tree`, target: 'task://tree', action: 'move' }]),
      );
      expect(n.state).toBe('AGENT_SCHEDULING_PENDING');
      expect(fs.readFileSync(path.join(sandbox, 'tree', 'sub', 'b'), 'utf8')).toBe('b\n');
      expect(fs.existsSync(`${client}/tree`)).toBe(false);
    },
  );
});
