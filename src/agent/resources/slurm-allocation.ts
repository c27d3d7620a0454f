import type { AgentNode, SrunOptions } from '../../components/executor/launch';
import type { Allocation, AllocationSite } from './allocation';
import { serviceHost } from './service-host';
import { slurmNodes } from './slurm/env';
import { slurmJobEnd } from './slurm/job-end';
import { probeMpi } from './slurm/mpi-probe';
import { slurmNodeAddresses } from './slurm/node-addresses';

/** What a Slurm allocation runs to learn more than its environment says (fakes in tests). */
export interface SlurmEffects {
  /** The job's EndTime (`scontrol show job`): slurm/job-end.ts. */
  jobEnd: typeof slurmJobEnd;
  /** The PMI plug-in of srun steps (a few commands and a one-rank step): slurm/mpi-probe.ts. */
  probeMpi: typeof probeMpi;
  /** Where other nodes reach a service on the agent's node: service-host.ts. */
  serviceHost: typeof serviceHost;
  /** Where services on the job's other nodes are reached (their NodeAddr): node-addresses.ts. */
  nodeAddresses: typeof slurmNodeAddresses;
}

const SLURM_EFFECTS: SlurmEffects = {
  jobEnd: slurmJobEnd,
  probeMpi,
  serviceHost,
  nodeAddresses: slurmNodeAddresses,
};

/**
 * The Slurm job the agent runs in (its batch step), read from the job's environment:
 *
 * - the agent's node is SLURMD_NODENAME (not the host name, which can differ), else the host
 *   name;
 * - its nodes are the job's (slurm/env.ts: SLURM_JOB_NODELIST, SLURM_JOB_CPUS_PER_NODE, GPUs
 *   and memory per node, the config's GPUs and memory where Slurm says nothing);
 * - its end is the job's EndTime, asked of scontrol (slurm/job-end.ts);
 * - tasks may start as srun steps (launch/srun.ts), and are by default when they have several
 *   ranks or their slot is on another node; the steps ask for GPUs as GRES when Slurm gave the
 *   job some (SLURM_JOB_GPUS, SLURM_GPUS_ON_NODE), use the PMI plug-in probed at start
 *   (slurm/mpi-probe.ts: the config's `mpi`, else chosen), and services on the agent's node are
 *   reached at its service host, those on other nodes at their NodeAddr.
 *
 * @throws ValidationError naming the variable when the job's environment is missing or
 * malformed (slurm/env.ts).
 */
export function slurmAllocation(
  site: AllocationSite,
  effects: SlurmEffects = SLURM_EFFECTS,
): Allocation {
  const { cfg, env } = site;
  const node = env.SLURMD_NODENAME ?? site.hostname;
  const nodes = slurmNodes(env, {
    gpusPerNode: cfg.gpus,
    ...(cfg.memMb !== undefined ? { memMbPerNode: cfg.memMb } : {}),
  });
  return {
    node,
    nodes,
    jobEnd: (warn) => effects.jobEnd(env, warn),
    async launch({ log, timeoutMs }) {
      const warnings: string[] = [];
      const choice = await effects.probeMpi({
        srun: 'srun',
        node,
        env,
        timeoutMs,
        ...(cfg.mpi !== undefined ? { requested: cfg.mpi } : {}),
      });
      log.info('srun mpi plug-in', {
        mpi: choice.mpi ?? "(Slurm's default)",
        why: choice.why,
        ...choice.facts,
      });
      if (choice.warning !== undefined) {
        warnings.push(choice.warning);
        log.warn('MPI programs started by srun may fail', { warning: choice.warning });
      }
      const srun: SrunOptions = {
        executable: 'srun',
        gpuGres: env.SLURM_JOB_GPUS !== undefined || env.SLURM_GPUS_ON_NODE !== undefined,
      };
      if (choice.mpi !== undefined) srun.mpi = choice.mpi;
      const [host, nodeHosts] = await Promise.all([
        effects.serviceHost(cfg.addresses.managerOutput),
        nodes.length > 1
          ? // the job's list as Slurm wrote it (n[1-9000]), not thousands of names on one line
            effects.nodeAddresses(env.SLURM_JOB_NODELIST ?? env.SLURM_NODELIST ?? '', (warning) => {
              warnings.push(warning);
              log.warn('services on other nodes are reached by node name', { warning });
            })
          : new Map<string, string>(),
      ]);
      const agentNode: AgentNode = { name: node, host };
      return { options: { agentNode, srun, nodeHosts }, warnings };
    },
  };
}
