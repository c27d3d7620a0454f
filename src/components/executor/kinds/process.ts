import type { Reason } from '../../../generated';
import { COMPONENTS } from '../../../states/task-model';
import type { ProcessJob, SpawnSpec } from '../effects';
import { buildLaunch, stepStatusPrefix, stepsReason, taskSteps } from '../launch';
import { TASK_DIR_FAILURE, workdirOf } from '../../shared/workdir';
import type { ExecutorKind } from './kind';

const REASON_BY_ERRNO: Record<string, Reason['code']> = {
  ENOENT: 'E_EXEC_NOT_FOUND',
  EACCES: 'E_EXEC_PERMISSION',
};

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
        ? { ...base, stream: { attempt: task.attempt } }
        : { ...base, stdoutPath: `${sandbox}/stdout`, stderrPath: `${sandbox}/stderr` };
    // its own directory: its spawner helper makes it, first (workdir.ts madeAtSpawn)
    if (launch.pilotSandbox !== undefined && sandbox !== launch.pilotSandbox) spec.mkdir = sandbox;
    if (l.files.length > 0) spec.files = l.files;
    if (l.killScope !== undefined) spec.killScope = l.killScope;
    if (l.cpus !== undefined) spec.cpus = l.cpus;
    // a follow-on start: its helper starts it when the task it follows ends (follow-ons.ts)
    if (task.follows !== undefined && l.method === 'fork') spec.after = task.follows;
    const job: ProcessJob = { kind: 'process', spec, method: l.method };
    if (taskSteps(task.description) !== undefined) {
      job.stepStatus = { prefix: stepStatusPrefix(sandbox), ranks: task.description.ranks ?? 1 };
    }
    return { ok: true, job };
  },

  exitReason(task, exit) {
    if (exit.steps !== undefined) return stepsReason(task, exit.steps);
    const lost = exit.output?.lost;
    if (lost === undefined) return undefined;
    // its own write succeeded (a pipe), so only this says that what it wrote is not all there
    return {
      code: 'E_OUTPUT_LOST',
      message: `the task's output was not all written: ${lost}`,
      component: COMPONENTS.executor,
      detail: { exitCode: exit.exitCode, signal: exit.signal },
    };
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
