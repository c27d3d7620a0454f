import { launchFailure, type LaunchMethodPlugin } from './method';
import { hostfile, rankCommand, rankSlots, rankWrappers, setRankTables } from './ranks';

/** Name of the hostfile (SLURM_HOSTFILE) written into the task sandbox for srun. */
export const SLURM_HOSTFILE = 'slurm-hostfile';

const SRUN_RANK = 'r=${SLURM_PROCID:?no SLURM_PROCID: not started by srun}';

/**
 * The rank wrappers under srun: the rank is SLURM_PROCID. Only there: OMPI_COMM_WORLD_RANK or
 * PMIX_RANK may be left over in the agent's environment, and the batch step has SLURM_PROCID=0,
 * which is why mpirun's wrapper never reads it.
 */
const SRUN_RANK_WRAPPERS = rankWrappers(SRUN_RANK, true);
export const SRUN_RANK_WRAPPER = SRUN_RANK_WRAPPERS.plain;

/** srun with GPU GRES: Slurm sets CUDA_VISIBLE_DEVICES to the GPUs it gave the rank. */
const SRUN_GRES_RANK_WRAPPERS = rankWrappers(SRUN_RANK, false);
export const SRUN_GRES_RANK_WRAPPER = SRUN_GRES_RANK_WRAPPERS.plain;

/**
 * A step of the Slurm allocation the agent runs in (LaunchOptions.srun); docs/launch-methods.md
 * has the checked facts behind each option.
 */
export const srun: LaunchMethodPlugin = {
  name: 'srun',

  suits: (_task, _ranks, opts) => opts.srun !== undefined,

  build({ task, ranks, env, opts }) {
    const slurm = opts.srun;
    if (slurm === undefined) {
      return launchFailure(
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
      return launchFailure(
        'E_LAUNCH_SLOTS',
        `launch 'srun' gives every rank the same resources: this task's slots hold ${[...cores].join(' or ')} cores and ${[...gpus].join(' or ')} GPUs`,
        { cores: [...cores], gpus: [...gpus] },
      );
    }
    const cpusPerTask = Math.max(1, slots[0]?.cores.length ?? 1);
    // GPUs seen, not reserved (placement.gpusVisible), are not Slurm's to give
    const gpusPerTask = slots[0]?.gpusUnreserved === true ? 0 : (slots[0]?.gpus.length ?? 0);
    const memMb = task.description.memPerRankMb ?? 0;
    setRankTables(env, slots, opts);
    // ranks on one node need no hostfile, a file per task (output 'stream' makes none)
    const nodes = [...new Set(slots.map((s) => s.node))];
    const one = nodes.length === 1 ? nodes[0]! : undefined;
    const path = `${opts.workDir}/${SLURM_HOSTFILE}`;
    if (one === undefined) env.SLURM_HOSTFILE = path;
    // The pilot's PMI for MPI programs, unless the task names one (srun reads SLURM_MPI_TYPE).
    const mpi = Object.hasOwn(env, 'SLURM_MPI_TYPE') ? undefined : slurm.mpi;
    const args = [
      `--job-name=${task.uid}`,
      // Explicit: the batch job's SLURM_NNODES is inherited. No --nodelist: it overrides the
      // hostfile's order.
      `--nodes=${nodes.length}`,
      `--ntasks=${ranks}`,
      `--cpus-per-task=${cpusPerTask}`,
      ...(one === undefined ? ['--distribution=arbitrary'] : [`--nodelist=${one}`]),
      // Without it a step may take every CPU of its node (Slurm before 22.05).
      '--exact',
      // --mem=0: the job's memory without reserving it, so steps share a node as forks do.
      memMb > 0 ? `--mem-per-cpu=${Math.ceil(memMb / cpusPerTask)}` : '--mem=0',
      ...(gres && gpusPerTask > 0 ? [`--gpus-per-task=${gpusPerTask}`] : []),
      ...(mpi !== undefined ? [`--mpi=${mpi}`] : []),
      '--kill-on-bad-exit=1',
      // A pilot submitted with --export=NONE would otherwise give the ranks an empty env.
      '--export=ALL',
      ...rankCommand(gres ? SRUN_GRES_RANK_WRAPPERS : SRUN_RANK_WRAPPERS, task, opts.workDir),
    ];
    const files =
      one === undefined
        ? [
            {
              path,
              content: hostfile(
                task,
                'line i is the node of rank i (srun --distribution=arbitrary)',
                slots,
              ),
            },
          ]
        : [];
    return {
      ok: true,
      launch: {
        method: 'srun',
        executable: slurm.executable,
        args,
        env,
        files,
        // srun's shepherd child cancels the step once srun dies: it must survive the kill.
        killScope: 'process',
      },
    };
  },
};
