import type { Reason, TaskRecord } from '../../generated';
import { COMPONENTS } from '../../states/task-model';

/**
 * How a task's ranks start: the command line, environment and small files for one task. Pure
 * (no I/O): the spawner helper writes `files` and then runs `executable args` with `env`
 * merged over its own environment.
 *
 * fork   - one rank: the task's own executable, with the per-rank variables set directly.
 * mpirun - OpenMPI 4.1. Checked on a 2-core Debian 12 box (openmpi-bin 4.1.4), as root:
 *   mpirun [--allow-run-as-root] -np N --hostfile <sandbox>/mpi-hostfile --map-by seq
 *          --bind-to none -x VAR... /bin/sh -c RANK_WRAPPER pf-rank <executable> <args...>
 *   - Placement: a hostfile with one line per rank, line i = slots[i].node, read by the
 *     sequential mapper (`--map-by seq`): rank i runs on line i's host. Checked with a fake ssh
 *     (`OMPI_MCA_plm_rsh_agent` running `unshare --uts` with the target's hostname): a hostfile
 *     `nodeA nodeB nodeA vm` put ranks 0..3 on nodeA, nodeB, nodeA, vm.
 *   - No rankfile: a rankfile binds each rank to its `slot=` cores, and on this box
 *     `rank 0=vm slot=2` (a core the pilot declares but the machine lacks) makes mpirun exit 1
 *     without a word; a rankfile without `slot=` is rejected. Binding is left off
 *     (`--bind-to none`): the scheduler's core numbers count capacity, they are not CPU ids.
 *   - No `--oversubscribe` needed: a host listed k times in the hostfile has k slots, so 5
 *     ranks on this 2-core host start (plain `mpirun -np 3` without a hostfile refuses).
 *   - `-x VAR` for every variable we set: mpirun passes its environment to ranks on its own
 *     host only; through ssh (checked with the fake ssh under `env -i`) ranks on other hosts
 *     saw PF_RANKS unset without `-x`, and set with it.
 *   - As root, `--allow-run-as-root` alone is enough (OpenMPI refuses root otherwise).
 *   - mpirun gives each local rank its own process group: a SIGKILL to mpirun's group leaves
 *     the ranks running, so the spawner signals the task's whole session (kill-session.ts).
 *   The per-rank values come from RANK_WRAPPER, which reads the rank from
 *   OMPI_COMM_WORLD_RANK (PMIX_RANK as a fallback) and the rank's GPUs from PF_RANK_GPUS.
 */

export type LaunchMethod = 'fork' | 'mpirun';

/** Set once per agent (the shell decides them, e.g. `asRoot: process.getuid() === 0`). */
export interface LaunchOptions {
  /** The OpenMPI mpirun to run: a path, or a name looked up in PATH. */
  mpirun: string;
  /** The agent runs as root: OpenMPI's mpirun refuses that without --allow-run-as-root. */
  asRoot: boolean;
}

export interface BuildLaunchOptions extends LaunchOptions {
  /** The task sandbox: PF_TASK_SANDBOX, and where launch files (the hostfile) go. */
  workDir: string;
}

/** A small file to write before spawning. */
export interface LaunchFile {
  path: string;
  content: string;
}

export interface Launch {
  method: LaunchMethod;
  executable: string;
  args: string[];
  /** Overrides merged over the spawner's environment. */
  env: Record<string, string>;
  files: LaunchFile[];
}

export type LaunchResult = { ok: true; launch: Launch } | { ok: false; reason: Reason };

/** Name of the hostfile written into the task sandbox for mpirun. */
export const MPI_HOSTFILE = 'mpi-hostfile';

/**
 * POSIX sh run by mpirun for each rank as `sh -c RANK_WRAPPER pf-rank <executable> <args...>`:
 * sets PF_RANK, and PF_GPUS and CUDA_VISIBLE_DEVICES to entry PF_RANK of PF_RANK_GPUS
 * (`;`-separated, one entry per rank, each a comma-separated GPU list, possibly empty), then
 * execs the task. `g` is wrapped in `;` so entry r is what follows the (r+1)-th `;`.
 */
export const RANK_WRAPPER = [
  'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:?no OMPI_COMM_WORLD_RANK: not started by mpirun}}',
  'g=";${PF_RANK_GPUS-};"',
  'i=0',
  'while [ "$i" -le "$r" ]; do g=${g#*;}; i=$((i + 1)); done',
  'g=${g%%;*}',
  'PF_RANK=$r PF_GPUS=$g CUDA_VISIBLE_DEVICES=$g',
  'export PF_RANK PF_GPUS CUDA_VISIBLE_DEVICES',
  'unset PF_RANK_GPUS',
  'exec "$@"',
].join('\n');

/** Variables set per rank (by the wrapper under mpirun), never taken from the description. */
const PER_RANK = ['PF_RANK', 'PF_GPUS', 'CUDA_VISIBLE_DEVICES'] as const;

/** The launch method a task gets: its own choice, else mpirun for more than one rank. */
export function launchMethodOf(task: TaskRecord): LaunchMethod {
  const d = task.description;
  return d.launch ?? ((d.ranks ?? 1) > 1 ? 'mpirun' : 'fork');
}

export function buildLaunch(task: TaskRecord, opts: BuildLaunchOptions): LaunchResult {
  const d = task.description;
  const ranks = d.ranks ?? 1;
  const method = launchMethodOf(task);
  const env: Record<string, string> = {
    ...d.environment,
    PF_TASK_ID: task.uid,
    PF_PILOT_ID: task.pilot ?? '',
    PF_SESSION_ID: task.session,
    PF_TASK_SANDBOX: opts.workDir,
    PF_RANKS: String(ranks),
  };
  switch (method) {
    case 'fork': {
      if (ranks > 1) {
        return fail(
          'E_LAUNCH_METHOD',
          `launch 'fork' runs one rank; this task asks ${ranks} ranks: use 'mpirun'`,
          { launch: method, ranks },
        );
      }
      const gpus = gpuList(task.slots?.[0]?.gpus);
      Object.assign(env, { PF_RANK: '0', PF_GPUS: gpus, CUDA_VISIBLE_DEVICES: gpus });
      return {
        ok: true,
        launch: { method, executable: d.executable, args: d.arguments ?? [], env, files: [] },
      };
    }
    case 'mpirun':
      return mpirun(task, ranks, env, opts);
  }
}

function mpirun(
  task: TaskRecord,
  ranks: number,
  env: Record<string, string>,
  opts: BuildLaunchOptions,
): LaunchResult {
  const d = task.description;
  const slots = task.slots ?? [];
  if (slots.length !== ranks) {
    return fail(
      'E_LAUNCH_SLOTS',
      `launch 'mpirun' needs one slot per rank: this task asks ${ranks} ranks but holds ${slots.length} slots`,
      { ranks, slots: slots.length },
    );
  }
  const badNode = slots.find((s) => !/^[^\s#]+$/.test(s.node));
  if (badNode !== undefined) {
    return fail(
      'E_LAUNCH_SLOTS',
      `launch 'mpirun' cannot place a rank on node '${badNode.node}': a host name has no blanks or '#'`,
      { node: badNode.node },
    );
  }
  for (const k of PER_RANK) delete env[k];
  env.PF_RANK_GPUS = slots.map((s) => gpuList(s.gpus)).join(';');
  const hostfile = `${opts.workDir}/${MPI_HOSTFILE}`;
  const content = [
    `# pilotfish task ${task.uid}: line i is the host of rank i (mpirun --map-by seq)`,
    ...slots.map((s) => s.node),
    '',
  ].join('\n');
  const args = [
    ...(opts.asRoot ? ['--allow-run-as-root'] : []),
    '-np',
    String(ranks),
    '--hostfile',
    hostfile,
    '--map-by',
    'seq',
    '--bind-to',
    'none',
    ...Object.keys(env)
      .sort()
      .flatMap((k) => ['-x', k]),
    '/bin/sh',
    '-c',
    RANK_WRAPPER,
    'pf-rank',
    d.executable,
    ...(d.arguments ?? []),
  ];
  return {
    ok: true,
    launch: {
      method: 'mpirun',
      executable: opts.mpirun,
      args,
      env,
      files: [{ path: hostfile, content }],
    },
  };
}

function gpuList(gpus: readonly number[] | undefined): string {
  return (gpus ?? []).join(',');
}

function fail(code: string, message: string, detail: Record<string, unknown>): LaunchResult {
  return { ok: false, reason: { code, message, component: COMPONENTS.executor, detail } };
}
