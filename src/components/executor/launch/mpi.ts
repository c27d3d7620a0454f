// Which PMI plug-in (`srun --mpi=`) a pilot's srun steps use: pure, from what the agent found.

/** The pilot description's default: choose from the MPI library found (`agent.mpi`). */
export const MPI_AUTO = 'auto';

/** What the agent found where it runs (src/agent/resources/slurm/mpi-probe.ts). */
export interface MpiFacts {
  /** `srun --mpi=list`: the plug-ins srun offers; undefined when it could not say. */
  srunTypes?: readonly string[];
  /** The OpenMPI on PATH (`ompi_info --parsable`) and how its ranks can start under srun. */
  openmpi?: {
    version: string;
    /** Built with PMIx (every OpenMPI 5; a pmix component other than s1, s2, isolated...). */
    pmix: boolean;
    /** Built with Slurm's PMI-2 (component pmix:s2), or PMI-1 (s1). */
    pmi2: boolean;
    pmi1: boolean;
  };
  /** MPICH on PATH (`mpichversion`): its ranks start under srun through PMI-2. */
  mpich?: boolean;
}

export interface MpiChoice {
  /** `--mpi=<mpi>` on every step; undefined: Slurm's MpiDefault. */
  mpi: string | undefined;
  /** Why, for the agent log. */
  why: string;
  /** What the user must know (MPI programs started by srun will fail), said once. */
  warning?: string;
}

/**
 * The plug-in for the pilot's steps: the one asked (`requested`, not 'auto'), else the one the
 * MPI library on PATH needs among those srun offers: PMIx for OpenMPI (Debian's is built
 * without Slurm's PMI: plain srun fails with "OMPI was not built with SLURM's PMI support"),
 * else its PMI-2; PMI-2 for MPICH; Slurm's default when there is no MPI or it needs nothing.
 */
export function chooseMpi(requested: string | undefined, facts: MpiFacts): MpiChoice {
  const offered = facts.srunTypes;
  const offers = (t: string): boolean => offered?.includes(t) ?? false;
  const list = offered === undefined ? 'nothing (srun --mpi=list failed)' : offered.join(', ');
  if (requested !== undefined && requested !== MPI_AUTO) {
    const choice: MpiChoice = { mpi: requested, why: `asked by the pilot (agent.mpi)` };
    if (offered !== undefined && !offers(requested)) {
      choice.warning = `agent.mpi '${requested}' is not a plug-in srun offers here (${list}): its srun steps will fail ("Invalid MPI type")`;
    }
    return choice;
  }
  const ompi = facts.openmpi;
  if (ompi !== undefined) {
    const name = `OpenMPI ${ompi.version}`;
    if (ompi.pmix && offers('pmix')) return { mpi: 'pmix', why: `${name} starts through PMIx` };
    if (ompi.pmi2 && offers('pmi2')) return { mpi: 'pmi2', why: `${name} has Slurm's PMI-2` };
    if (ompi.pmi1) return { mpi: undefined, why: `${name} has Slurm's PMI-1: Slurm's default` };
    return {
      mpi: undefined,
      why: `${name} needs a PMI that srun here lacks`,
      warning: `${name} on PATH needs ${ompi.pmix ? 'PMIx' : "Slurm's PMI"}, and srun here offers ${list}: MPI programs started by srun will fail ("OMPI was not built with SLURM's PMI support"); install Slurm's PMIx support (Debian: libpmix-dev, then restart slurmd) or give such tasks launch 'mpirun'`,
    };
  }
  if (facts.mpich === true && offers('pmi2')) {
    return { mpi: 'pmi2', why: 'MPICH starts through PMI-2' };
  }
  return { mpi: undefined, why: "no MPI library on PATH needs a plug-in: Slurm's default" };
}

/**
 * The choice once a one-rank step tried it: `works` false when `srun --mpi=<mpi>` failed where
 * `--mpi=none` ran (`error`: srun's first line). An automatic choice then falls back to Slurm's
 * default with a warning; an asked one stays, with the warning. Undefined `works`: the test
 * could not tell (both failed, or it timed out), and the choice stands.
 */
export function checkedMpi(
  choice: MpiChoice,
  requested: string | undefined,
  works: boolean | undefined,
  error = '',
): MpiChoice {
  if (works !== false || choice.mpi === undefined) return choice;
  const failed = `a step with srun --mpi=${choice.mpi} fails here${error === '' ? '' : ` (${error})`}`;
  if (requested !== undefined && requested !== MPI_AUTO) {
    const warning = `${failed}: every srun step of this pilot will fail`;
    // what the choice said already (not offered) comes first
    return {
      ...choice,
      warning: choice.warning === undefined ? warning : `${choice.warning}; ${warning}`,
    };
  }
  return {
    mpi: undefined,
    why: `${choice.why}, but ${failed}: Slurm's default`,
    warning: `${choice.why}, but ${failed}: MPI programs started by srun will fail; give them launch 'mpirun', or fix Slurm's ${choice.mpi} plug-in (restart slurmd after installing it)`,
  };
}
