import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Notification, TaskRecord } from '../../../src/generated';
import { AgentInputStagerShell } from '../../../src/components/agent-input-stager/shell';
import { AgentOutputStagerShell } from '../../../src/components/agent-output-stager/shell';
import { AgentSchedulerShell } from '../../../src/components/agent-scheduler/shell';
import { systemClock } from '../../../src/lib/clock';
import { silentLogger } from '../../../src/lib/logger';
import { LocalQueue } from '../../../src/transport/local-queue';
import { gone } from '../../support/dir-entries';
import { taskIn } from '../../support/fixtures';

/** A shell's deps with a LocalQueue as the next component, and what they received. */
function deps() {
  const next = new LocalQueue<TaskRecord>();
  const notes: Notification[] = [];
  const forwarded = new Promise<TaskRecord[]>((resolve) => next.consume(resolve));
  const states = (): string[] => notes.map((n) => `${n.uid} ${n.state}`);
  return {
    deps: {
      notes: { send: (ns: readonly Notification[]) => void notes.push(...ns) },
      next,
      log: silentLogger,
      clock: systemClock,
    },
    forwarded,
    states,
  };
}

describe('the agent-side component shells, on real files', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const tmp = (): string => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'pf-shells-'));
    dirs.push(d);
    return d;
  };

  it('AgentInputStagerShell makes the sandbox (with task.json when asked), then hands the task on', async () => {
    const dir = tmp();
    const { deps: d, forwarded, states } = deps();
    const shell = new AgentInputStagerShell(d, dir, undefined, { output: 'files', taskJson: true });
    shell.core.onTasks([taskIn('AGENT_STAGING_INPUT_PENDING', { uid: 't1', pilot: 'p' })]);
    const [task] = await forwarded;
    expect(task).toMatchObject({ uid: 't1', state: 'AGENT_SCHEDULING_PENDING', output: 'files' });
    expect(JSON.parse(readFileSync(path.join(dir, 't1', 'task.json'), 'utf8'))).toEqual({
      executable: '/bin/true',
    });
    expect(states()).toEqual(['t1 AGENT_STAGING_INPUT', 't1 AGENT_SCHEDULING_PENDING']);
  });

  it("AgentInputStagerShell makes no task.json by default, and only the directories no spawner helper makes; none in workdir 'pilot'", async () => {
    const dir = tmp();
    const { deps: d, forwarded } = deps();
    const shell = new AgentInputStagerShell(d, dir, undefined, {
      output: 'stream',
      taskJson: false,
    });
    const fn = { mode: 'function' as const, function: { module: '/m.js' } };
    shell.core.onTasks([
      taskIn('AGENT_STAGING_INPUT_PENDING', { uid: 't1', pilot: 'p' }),
      taskIn('AGENT_STAGING_INPUT_PENDING', {
        uid: 't2',
        pilot: 'p',
        description: { output: 'files' },
      }),
      taskIn('AGENT_STAGING_INPUT_PENDING', {
        uid: 't3',
        pilot: 'p',
        description: { workdir: 'pilot' },
      }),
      taskIn('AGENT_STAGING_INPUT_PENDING', { uid: 't4', pilot: 'p', description: fn }),
    ]);
    const tasks = await forwarded;
    expect(tasks.map((t) => [t.uid, t.output, t.sandbox])).toEqual([
      ['t1', 'stream', path.join(dir, 't1')],
      ['t2', 'files', path.join(dir, 't2')],
      ['t3', 'stream', dir],
      ['t4', undefined, path.join(dir, 't4')],
    ]);
    // t1 and t2 are made by the spawner helpers that start them (SpawnSpec.mkdir)
    expect(readdirSync(dir)).toEqual(['t4']);
    expect(readdirSync(path.join(dir, 't4'))).toEqual([]);
  });

  it('AgentSchedulerShell hands a task that fits on with its slots', async () => {
    const { deps: d, forwarded, states } = deps();
    const shell = new AgentSchedulerShell(d, [{ name: 'n0', cores: 2, gpus: 0, memMb: 1024 }]);
    shell.core.onTasks([taskIn('AGENT_SCHEDULING_PENDING', { uid: 't1', pilot: 'p' })]);
    const [task] = await forwarded;
    expect(task).toMatchObject({ uid: 't1', state: 'AGENT_EXECUTING_PENDING' });
    expect(states()).toEqual(['t1 AGENT_SCHEDULING', 't1 AGENT_EXECUTING_PENDING']);
  });

  it('AgentOutputStagerShell reads the output tails into the task it hands back', async () => {
    const sandbox = path.join(tmp(), 't1');
    mkdirSync(sandbox);
    writeFileSync(path.join(sandbox, 'stdout'), 'hello\n');
    const { deps: d, forwarded, states } = deps();
    const shell = new AgentOutputStagerShell(d, path.dirname(sandbox));
    shell.core.onTasks([taskIn('AGENT_STAGING_OUTPUT_PENDING', { uid: 't1', sandbox })]);
    const [task] = await forwarded;
    expect(task).toMatchObject({
      uid: 't1',
      state: 'TMGR_STAGING_OUTPUT_PENDING',
      stdout: 'hello\n',
      stderr: '',
    });
    expect(states()).toEqual(['t1 AGENT_STAGING_OUTPUT', 't1 TMGR_STAGING_OUTPUT_PENDING']);
  });

  it("AgentOutputStagerShell removes a task's own directory that stayed empty, and keeps one with files", async () => {
    const pilot = tmp();
    for (const uid of ['empty', 'full']) mkdirSync(path.join(pilot, uid));
    writeFileSync(path.join(pilot, 'full', 'out.txt'), 'x\n');
    const { deps: d, forwarded } = deps();
    const shell = new AgentOutputStagerShell(d, pilot);
    shell.core.onTasks(
      ['empty', 'full'].map((uid) =>
        taskIn('AGENT_STAGING_OUTPUT_PENDING', {
          uid,
          sandbox: path.join(pilot, uid),
          output: 'stream',
        }),
      ),
    );
    await forwarded;
    await gone([path.join(pilot, 'empty')], 5_000); // in the background
    expect(readdirSync(pilot)).toEqual(['full']);
  });
});
