import { type LaunchMethodPlugin } from './method';
import { hostfile, rankCommand, rankSlots, rankWrappers, setRankTables } from './ranks';

/** Name of the hostfile written into the task sandbox for mpirun. */
export const MPI_HOSTFILE = 'mpi-hostfile';

/** The rank wrappers under mpirun: the rank is OMPI_COMM_WORLD_RANK (PMIX_RANK as a fallback). */
export const RANK_WRAPPERS = rankWrappers(
  'r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:?no OMPI_COMM_WORLD_RANK: not started by mpirun}}',
  true,
);

/** The rank wrapper under mpirun of a task without preExec and postExec. */
export const RANK_WRAPPER = RANK_WRAPPERS.plain;

/**
 * OpenMPI's mpirun, ranks placed by a hostfile read in sequence (docs/launch-methods.md has the
 * checked facts behind each option). Any number of ranks on any nodes.
 */
export const mpirun: LaunchMethodPlugin = {
  name: 'mpirun',

  suits: () => true,

  build({ task, ranks, env, opts }) {
    const placed = rankSlots('mpirun', task, ranks);
    if (!placed.ok) return placed.result;
    const slots = placed.slots;
    setRankTables(env, slots, opts);
    const path = `${opts.workDir}/${MPI_HOSTFILE}`;
    const args = [
      // OpenMPI refuses to run as root without it.
      ...(opts.asRoot ? ['--allow-run-as-root'] : []),
      '-np',
      String(ranks),
      '--hostfile',
      path,
      // Rank i on hostfile line i; a host listed k times has k slots (no --oversubscribe).
      '--map-by',
      'seq',
      // The rank wrapper pins each rank to its slot's CPUs (a rankfile cannot: see the doc).
      '--bind-to',
      'none',
      // mpirun passes its environment to ranks on its own host only: export every variable.
      ...Object.keys(env)
        .sort()
        .flatMap((k) => ['-x', k]),
      ...rankCommand(RANK_WRAPPERS, task, opts.workDir),
    ];
    const content = hostfile(task, 'line i is the host of rank i (mpirun --map-by seq)', slots);
    return {
      ok: true,
      launch: {
        method: 'mpirun',
        executable: opts.mpirun,
        args,
        env,
        files: [{ path, content }],
      },
    };
  },
};
