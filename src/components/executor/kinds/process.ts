import type { Reason, TaskRecord } from '../../../generated';
import { COMPONENTS } from '../../../states/task-model';
import type { ExitedEvent, ProcessJob, SpawnSpec } from '../effects';
import { buildLaunch, stepStatusPrefix, stepsReason, taskSteps } from '../launch';
import { TASK_DIR_FAILURE, removedWhenEmpty, workdirOf } from '../../shared/workdir';
import type { ExecutorKind } from './kind';
import { taskLimitsOf } from './limits';

const REASON_BY_ERRNO: Record<string, Reason['code']> = {
  ENOENT: 'E_EXEC_NOT_FOUND',
  EACCES: 'E_EXEC_PERMISSION',
};

/** A 'stream' spawn's attempt, and its own output cap (else its helper's, the pilot's). */
function streamOf(task: TaskRecord): { attempt: number; capBytes?: number } {
  const cap = task.description.outputCapBytes;
  return cap === undefined ? { attempt: task.attempt } : { attempt: task.attempt, capBytes: cap };
}

/** mode 'executable': the task's executable, started by a launch method in a spawner helper. */
export const processKind: ExecutorKind<ProcessJob> = {
  mode: 'executable',

  prepare(task, sandbox, launch) {
    const built = buildLaunch(task, { ...launch, workDir: sandbox });
    if (!built.ok) return built;
    const l = built.launch;
    const base = {
      uid: task.uid,
      executable: l.executable,
      args: l.args,
      env: l.env,
      cwd: workdirOf(task.description, sandbox, launch.pilotSandbox ?? sandbox),
    };
    // the AgentInputStager chose (services always 'files': their readiness reads the files)
    const spec: SpawnSpec =
      task.output === 'stream'
        ? { ...base, stream: streamOf(task) }
        : { ...base, stdoutPath: `${sandbox}/stdout`, stderrPath: `${sandbox}/stderr` };
    // its own directory: its spawner helper makes it, first (workdir.ts madeAtSpawn)
    if (launch.pilotSandbox !== undefined && sandbox !== launch.pilotSandbox) {
      spec.mkdir = sandbox;
      // left empty, it would be removed (the AgentOutputStager): its helper may keep it instead
      // (with output 'files' its stdout and stderr are in it: never empty)
      if (task.output === 'stream' && removedWhenEmpty(task.description)) spec.recycle = true;
    }
    if (l.files.length > 0) spec.files = l.files;
    if (l.killScope !== undefined) spec.killScope = l.killScope;
    if (l.cpus !== undefined) spec.cpus = l.cpus;
    const limits = taskLimitsOf(task, l.method, launch.taskLimits);
    if (limits !== undefined) spec.limits = limits;
    // a follow-on start: its helper starts it when the task it follows ends (follow-ons.ts)
    if (task.follows !== undefined && l.method === 'fork') spec.after = task.follows;
    const job: ProcessJob = { kind: 'process', spec, method: l.method };
    const node = task.slots?.[0]?.node;
    if (l.method === 'fork' && node !== undefined && launch.subAgentNodes?.has(node) === true) {
      job.node = node;
      job.attempt = task.attempt;
    }
    if (taskSteps(task.description) !== undefined) {
      job.stepStatus = { prefix: stepStatusPrefix(sandbox), ranks: task.description.ranks ?? 1 };
    }
    return { ok: true, job };
  },

  // output lost to a full disk is a warning on the task (ExecutorCore: task.outputLost), never
  // its failure: its exit decides, and a task that succeeded is not run again
  exitReason(task, exit) {
    if (exit.oom !== undefined && exit.exitCode !== 0) return oomReason(exit);
    return exit.steps === undefined ? undefined : stepsReason(task, exit.steps);
  },

  startFailure(task, job, f, pid): Reason {
    if (f.message.startsWith(TASK_DIR_FAILURE)) {
      const message = `cannot create the task sandbox: ${f.message} (${f.code})`;
      return {
        code: 'E_STAGING',
        message,
        component: COMPONENTS.executor,
        detail: { errno: f.code },
      };
    }
    const exe = task.description.executable;
    const { method } = job;
    const launcher = job.spec.executable;
    // Under mpirun or srun the spawner runs the launcher: a failure to start it is about that.
    const what =
      method !== 'fork'
        ? `the launcher '${launcher}' of '${exe}'`
        : job.stepStatus !== undefined
          ? `the shell '${launcher}' of '${exe}'`
          : `'${exe}'`;
    const message =
      pid === undefined
        ? `cannot execute ${what}: ${f.message} (${f.code})`
        : `lost ${what} (pid ${pid}): ${f.message} (${f.code})`;
    const detail: Record<string, unknown> = { errno: f.code };
    if (method !== 'fork' || job.stepStatus !== undefined) detail.launcher = launcher;
    return {
      code: REASON_BY_ERRNO[f.code] ?? 'E_EXEC_FAILED',
      message,
      component: COMPONENTS.executor,
      detail,
    };
  },
};

/** The OOM killer ended processes of the task: its memory limit was too small for it. */
function oomReason(exit: ExitedEvent): Reason {
  const { kills, limitBytes } = exit.oom!;
  const limitMb = Math.round(limitBytes / (1024 * 1024));
  const what = kills === 1 ? 'a process' : `${kills} processes`;
  return {
    code: 'E_OUT_OF_MEMORY',
    message: `the task used more than its memory limit of ${limitMb} MiB: the kernel killed ${what} of it (raise memPerRankMb or limits.memoryMb)`,
    component: COMPONENTS.executor,
    detail: { limitMb, oomKills: kills, exitCode: exit.exitCode, signal: exit.signal },
  };
}
