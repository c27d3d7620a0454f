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
 * srun   - a step of the Slurm allocation the agent runs in (LaunchOptions.slurm). Checked with
 *   Slurm 22.05.8 (Debian 12) on a lab cluster of 2 fake nodes n1, n2 of 2 CPUs (select/cons_tres,
 *   CR_Core_Memory, proctrack/linuxproc, task/none), srun run with the environment of a 2-node
 *   `sbatch --exclusive` job's batch step, as the agent has it (SLURM_JOB_ID, SLURM_NNODES,
 *   SLURM_MEM_PER_CPU or SLURM_MEM_PER_NODE, ... inherited):
 *     SLURM_HOSTFILE=<sandbox>/slurm-hostfile srun --job-name=<task uid> --nodes=<distinct nodes>
 *       --ntasks=<ranks> --cpus-per-task=<cores per rank> --distribution=arbitrary --exact
 *       (--mem=0 | --mem-per-cpu=<ceil(memPerRankMb / cores per rank)>) [--gpus-per-task=<n>]
 *       --kill-on-bad-exit=1 --export=ALL /bin/sh -c SRUN_RANK_WRAPPER pf-rank <executable> <args...>
 *   - Placement: SLURM_HOSTFILE with one line per rank (line i = slots[i].node; `#` comments
 *     allowed) and `--distribution=arbitrary`: a file n2,n1,n2 put ranks 0..2 on n2, n1, n2.
 *     No `--nodelist`: given with the hostfile it wins and the order is lost (hostfile n2,n1 plus
 *     `--nodelist=n1,n2` put rank 0 on n1), and a distinct-node list with more ranks than nodes
 *     fails ("You asked for 3 tasks but hostlist specified 2 nodes"). `--nodes` is explicit
 *     because SLURM_NNODES of the batch job is inherited ("can't run 1 processes on 2 nodes").
 *   - `--exact`: without it (and without -c) a 1-rank step took every CPU of its node and the
 *     next step waited ("step creation temporarily disabled, retrying (Requested nodes are
 *     busy)"); 22.05 implies it with `--cpus-per-task`, older releases do not. The agent's own
 *     batch step holds no CPUs: a 2-CPU step on the agent's node starts at once. Four 1-CPU
 *     steps started together filled the 4 CPUs without waiting, 10 times in a row.
 *   - No `--overlap`: steps share the allocation without it, and Slurm's own count stays a
 *     safety net (a step finding its CPUs busy waits instead of oversubscribing). After a SIGKILL
 *     of srun the step record lingers and a step on the same CPUs waited ~2 s; after a SIGTERM
 *     srun exits only once the step has ended, and back-to-back steps never waited (30 runs).
 *   - Memory: a step without a memory option reserves memory: the inherited SLURM_MEM_PER_CPU
 *     times its CPUs, or, under `sbatch --mem` (SLURM_MEM_PER_NODE inherited), all the job's
 *     memory on the node, so a second step there waited until the first ended. `--mem=0` gives
 *     the step the job's memory without reserving any: concurrent `--mem=0` steps ran together,
 *     as forked tasks share the node. A task that asks memory gets `--mem-per-cpu`; a step
 *     asking more than the job holds on a node waits, without an error, until killed (8 s
 *     tried), so the agent must count the job's memory, not the node's.
 *   - `--export=ALL`: a pilot job submitted with `--export=NONE` leaves SLURM_EXPORT_ENV=NONE
 *     in the agent's environment; then the ranks got an empty environment (`sh` not found: no
 *     PATH). With `--export=ALL` a variable set for srun reached the rank.
 *   - `--kill-on-bad-exit=1`: when a rank fails the others are ended (SIGTERM) at once instead
 *     of running on; srun then exits with the highest status (rank 1 `exit 3`, rank 0 sleeping:
 *     143). A single rank's `exit 3` gives 3, a rank killed by a signal 128+signal, a missing
 *     executable 127 (the wrapper's exec).
 *   - Not used: `--unbuffered` (runs ranks on a pseudo-terminal: stdout is a tty), `--cpu-bind`
 *     (binding is the site's choice; with task/none `--cpu-bind=none` only adds a line to
 *     stderr), `--overlap`, `--immediate`.
 *   - Errors, in the task's stderr, srun exiting 1: cores beyond the allocation "More processors
 *     requested than permitted"; a node outside it "Requested node configuration is not
 *     available"; `--gpus-per-task` without GPU GRES "Invalid generic resource (gres)
 *     specification".
 *   - Ending: srun turns a SIGTERM into a SIGKILL of every rank ("forcing job termination"), so
 *     ranks get no grace period, then waits for the step to end (KillWait) and exits. srun forks
 *     a "shepherd" child (same group and session) that cancels the step when srun dies: after a
 *     SIGKILL of srun alone the ranks on every node were gone 10-65 ms later (ranks ignoring
 *     SIGTERM too), but a SIGKILL of srun's process group killed the shepherd as well and left
 *     both ranks running until the job ended. So srun tasks are signaled as one process
 *     (killScope 'process'), never as a group or session. Two SIGINTs give the ranks SIGINT,
 *     then SIGKILL.
 *   - Latency (20 runs each, from a shell): the first rank ran 31-70 ms after srun was started,
 *     median 35-50 ms, whether on the agent's node or the other, 1 to 4 ranks; srun of a no-op
 *     exited after ~45-55 ms (one rank per node) or ~145 ms (two ranks on one node).
 *   - GPUs: the lab has no GPU GRES, so this path (slurm.gpuGres false) asks Slurm for none and
 *     the wrapper sets CUDA_VISIBLE_DEVICES from the slot, as under mpirun. With gpuGres the
 *     step asks `--gpus-per-task=<GPUs per slot>` and keeps the CUDA_VISIBLE_DEVICES Slurm sets
 *     (under ConstrainDevices only Slurm's picks are usable); PF_GPUS still names the slot's GPUs.
 *     Slurm has no fraction of a GPU: a rank sharing one (gpusPerRank < 1) asks a whole GPU, so
 *     such steps take turns. Not checked on a cluster with GPU GRES.
 *   SRUN_RANK_WRAPPER is RANK_WRAPPER reading the rank from SLURM_PROCID.
 */

export type LaunchMethod = 'fork' | 'mpirun' | 'srun';

type Slot = NonNullable<TaskRecord['slots']>[number];

/** Set once per agent (the shell decides them, e.g. `asRoot: process.getuid() === 0`). */
export interface LaunchOptions {
  /** The OpenMPI mpirun to run: a path, or a name looked up in PATH. */
  mpirun: string;
  /** The agent runs as root: OpenMPI's mpirun refuses that without --allow-run-as-root. */
  asRoot: boolean;
  /**
   * Set when the agent runs inside a Slurm allocation (its environment has SLURM_JOB_ID), by the
   * agent's wiring. Then a task without `launch` is forked when it has one rank and its slot is
   * on `node`, and started as an srun step otherwise. Unset: 'srun' fails the task.
   */
  slurm?: SlurmLaunchOptions;
}

export interface SlurmLaunchOptions {
  /** The srun to run: a path, or a name looked up in PATH. */
  srun: string;
  /**
   * The Slurm name of the node the agent runs on (SLURMD_NODENAME; not os.hostname(), which
   * can differ): the node name its slots carry for this node.
   */
  node: string;
  /**
   * The allocation's GPUs are Slurm GRES (SLURM_JOB_GPUS or SLURM_GPUS_ON_NODE set): a step then
   * asks for its GPUs with --gpus-per-task and keeps the CUDA_VISIBLE_DEVICES Slurm gives it.
   * Default false: Slurm is asked for no GPU and each rank's CUDA_VISIBLE_DEVICES is its slot's.
   */
  gpuGres?: boolean;
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
  /**
   * What a kill signals: unset, the task's process group and session (fork, mpirun); 'process',
   * the launcher alone (srun: its shepherd child must survive it to cancel the step).
   */
  killScope?: 'process';
}

export type LaunchResult = { ok: true; launch: Launch } | { ok: false; reason: Reason };

/** Name of the hostfile written into the task sandbox for mpirun. */
export const MPI_HOSTFILE = 'mpi-hostfile';

/** Name of the hostfile (SLURM_HOSTFILE) written into the task sandbox for srun. */
export const SLURM_HOSTFILE = 'slurm-hostfile';

/**
 * The POSIX sh run for each rank as `sh -c WRAPPER pf-rank <executable> <args...>`: takes the
 * rank from the launcher's variable (`rankLine` sets r), sets PF_RANK, and PF_GPUS (and
 * CUDA_VISIBLE_DEVICES unless `cuda` is false) to entry PF_RANK of PF_RANK_GPUS (`;`-separated,
 * one entry per rank, each a comma-separated GPU list, possibly empty), then execs the task.
 * `g` is wrapped in `;` so entry r is what follows the (r+1)-th `;`.
 */
function rankWrapper(rankLine: string, cuda: boolean): string {
  return [
    rankLine,
    'g=";${PF_RANK_GPUS-};"',
    'i=0',
    'while [ "$i" -le "$r" ]; do g=${g#*;}; i=$((i + 1)); done',
    'g=${g%%;*}',
    ...(cuda
      ? [
          'PF_RANK=$r PF_GPUS=$g CUDA_VISIBLE_DEVICES=$g',
          'export PF_RANK PF_GPUS CUDA_VISIBLE_DEVICES',
        ]
      : ['PF_RANK=$r PF_GPUS=$g', 'export PF_RANK PF_GPUS']),
    'unset PF_RANK_GPUS',
    'exec "$@"',
  ].join('\n');
}

/** The rank wrapper under mpirun: the rank is OMPI_COMM_WORLD_RANK (PMIX_RANK as a fallback). */
export const RANK_WRAPPER = rankWrapper(
  'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:?no OMPI_COMM_WORLD_RANK: not started by mpirun}}',
  true,
);

const SRUN_RANK = 'r=${SLURM_PROCID:?no SLURM_PROCID: not started by srun}';

/**
 * The rank wrapper under srun: the rank is SLURM_PROCID. Only there: OMPI_COMM_WORLD_RANK or
 * PMIX_RANK may be left over in the agent's environment, and the batch step has SLURM_PROCID=0,
 * which is why mpirun's wrapper never reads it.
 */
export const SRUN_RANK_WRAPPER = rankWrapper(SRUN_RANK, true);

/** srun with GPU GRES: Slurm sets CUDA_VISIBLE_DEVICES to the GPUs it gave the rank. */
export const SRUN_GRES_RANK_WRAPPER = rankWrapper(SRUN_RANK, false);

/** Variables set per rank (by the wrapper under mpirun), never taken from the description. */
const PER_RANK = ['PF_RANK', 'PF_GPUS', 'CUDA_VISIBLE_DEVICES'] as const;

/**
 * The launch method a task gets: its own choice, else, outside Slurm, mpirun for more than one
 * rank and fork for one; inside a Slurm allocation (`slurm` given) fork for one rank whose slot
 * is on the agent's node (or that has no slot) and srun for the rest.
 */
export function launchMethodOf(task: TaskRecord, slurm?: SlurmLaunchOptions): LaunchMethod {
  const d = task.description;
  if (d.launch !== undefined) return d.launch;
  const ranks = d.ranks ?? 1;
  if (slurm === undefined) return ranks > 1 ? 'mpirun' : 'fork';
  const node = task.slots?.[0]?.node;
  return ranks === 1 && (node === undefined || node === slurm.node) ? 'fork' : 'srun';
}

export function buildLaunch(task: TaskRecord, opts: BuildLaunchOptions): LaunchResult {
  const d = task.description;
  const ranks = d.ranks ?? 1;
  const method = launchMethodOf(task, opts.slurm);
  const env = copyEnv(d.environment);
  env.PF_TASK_ID = task.uid;
  env.PF_PILOT_ID = task.pilot ?? '';
  env.PF_SESSION_ID = task.session;
  env.PF_TASK_SANDBOX = opts.workDir;
  env.PF_RANKS = String(ranks);
  switch (method) {
    case 'fork': {
      if (ranks > 1) {
        return fail(
          'E_LAUNCH_METHOD',
          `launch 'fork' runs one rank; this task asks ${ranks} ranks: use '${opts.slurm === undefined ? 'mpirun' : 'srun'}'`,
          { launch: method, ranks },
        );
      }
      const node = task.slots?.[0]?.node;
      if (opts.slurm !== undefined && node !== undefined && node !== opts.slurm.node) {
        return fail(
          'E_LAUNCH_METHOD',
          `launch 'fork' runs on the agent's node '${opts.slurm.node}'; this task's slot is on '${node}': use 'srun'`,
          { launch: method, node, agentNode: opts.slurm.node },
        );
      }
      const gpus = gpuList(task.slots?.[0]?.gpus);
      env.PF_RANK = '0';
      env.PF_GPUS = gpus;
      env.CUDA_VISIBLE_DEVICES = gpus;
      return {
        ok: true,
        launch: { method, executable: d.executable, args: d.arguments ?? [], env, files: [] },
      };
    }
    case 'mpirun':
      return mpirun(task, ranks, env, opts);
    case 'srun':
      return srun(task, ranks, env, opts);
  }
}

/** The task's slots, one per rank, on nodes a hostfile can name; or why not. */
function rankSlots(
  method: LaunchMethod,
  task: TaskRecord,
  ranks: number,
): { ok: true; slots: Slot[] } | { ok: false; result: LaunchResult } {
  const slots = task.slots ?? [];
  if (slots.length !== ranks) {
    return {
      ok: false,
      result: fail(
        'E_LAUNCH_SLOTS',
        `launch '${method}' needs one slot per rank: this task asks ${ranks} ranks but holds ${slots.length} slots`,
        { ranks, slots: slots.length },
      ),
    };
  }
  // A hostfile line holds one name: no blanks, no '#' (comment), and for Slurm no ','.
  const badNode = slots.find((s) => !/^[^\s#,]+$/.test(s.node));
  if (badNode !== undefined) {
    return {
      ok: false,
      result: fail(
        'E_LAUNCH_SLOTS',
        `launch '${method}' cannot place a rank on node '${badNode.node}': a host name has no blanks, '#' or ','`,
        { node: badNode.node },
      ),
    };
  }
  return { ok: true, slots };
}

function mpirun(
  task: TaskRecord,
  ranks: number,
  env: Record<string, string>,
  opts: BuildLaunchOptions,
): LaunchResult {
  const placed = rankSlots('mpirun', task, ranks);
  if (!placed.ok) return placed.result;
  const slots = placed.slots;
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
    ...rankCommand(RANK_WRAPPER, task),
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

function srun(
  task: TaskRecord,
  ranks: number,
  env: Record<string, string>,
  opts: BuildLaunchOptions,
): LaunchResult {
  const d = task.description;
  const slurm = opts.slurm;
  if (slurm === undefined) {
    return fail(
      'E_LAUNCH_METHOD',
      "launch 'srun' starts a step of the Slurm allocation the agent runs in, and this agent runs outside Slurm: use 'fork' or 'mpirun'",
      { launch: 'srun' },
    );
  }
  const placed = rankSlots('srun', task, ranks);
  if (!placed.ok) return placed.result;
  const slots = placed.slots;
  const cores = new Set(slots.map((s) => s.cores.length));
  const gpus = new Set(slots.map((s) => s.gpus.length));
  const gres = slurm.gpuGres === true;
  if (cores.size > 1 || (gres && gpus.size > 1)) {
    return fail(
      'E_LAUNCH_SLOTS',
      `launch 'srun' gives every rank the same resources: this task's slots hold ${[...cores].join(' or ')} cores and ${[...gpus].join(' or ')} GPUs`,
      { cores: [...cores], gpus: [...gpus] },
    );
  }
  const cpusPerTask = Math.max(1, slots[0]?.cores.length ?? 1);
  const gpusPerTask = slots[0]?.gpus.length ?? 0;
  const memMb = d.memPerRankMb ?? 0;
  for (const k of PER_RANK) delete env[k];
  env.PF_RANK_GPUS = slots.map((s) => gpuList(s.gpus)).join(';');
  const hostfile = `${opts.workDir}/${SLURM_HOSTFILE}`;
  env.SLURM_HOSTFILE = hostfile;
  const content = [
    `# pilotfish task ${task.uid}: line i is the node of rank i (srun --distribution=arbitrary)`,
    ...slots.map((s) => s.node),
    '',
  ].join('\n');
  const args = [
    `--job-name=${task.uid}`,
    `--nodes=${new Set(slots.map((s) => s.node)).size}`,
    `--ntasks=${ranks}`,
    `--cpus-per-task=${cpusPerTask}`,
    '--distribution=arbitrary',
    '--exact',
    memMb > 0 ? `--mem-per-cpu=${Math.ceil(memMb / cpusPerTask)}` : '--mem=0',
    ...(gres && gpusPerTask > 0 ? [`--gpus-per-task=${gpusPerTask}`] : []),
    '--kill-on-bad-exit=1',
    '--export=ALL',
    ...rankCommand(gres ? SRUN_GRES_RANK_WRAPPER : SRUN_RANK_WRAPPER, task),
  ];
  return {
    ok: true,
    launch: {
      method: 'srun',
      executable: slurm.srun,
      args,
      env,
      files: [{ path: hostfile, content }],
      killScope: 'process',
    },
  };
}

/**
 * A copy of the task's environment to add the PF_* variables to, on the Executor's hot path.
 * Object.assign into a fresh object then plain stores: V8 runs `{ ...environment, K: v, ... }`
 * about 50x slower (measured 6.8 us against 0.14 us per task). The spread remains for a variable
 * named '__proto__' (the schema allows it), which Object.assign would take as the prototype.
 */
/** What mpirun or srun starts on each rank: the task's command under a rank wrapper. */
function rankCommand(wrapper: string, task: TaskRecord): string[] {
  const d = task.description;
  return ['/bin/sh', '-c', wrapper, 'pf-rank', d.executable, ...(d.arguments ?? [])];
}

function copyEnv(environment: Record<string, string> | undefined): Record<string, string> {
  if (environment === undefined) return {};
  return Object.hasOwn(environment, '__proto__')
    ? { ...environment }
    : Object.assign({}, environment);
}

function gpuList(gpus: readonly number[] | undefined): string {
  return (gpus ?? []).join(',');
}

function fail(
  code: Reason['code'],
  message: string,
  detail: Record<string, unknown>,
): LaunchResult {
  return { ok: false, reason: { code, message, component: COMPONENTS.executor, detail } };
}
