import { execFile } from 'node:child_process';
import {
  checkedMpi,
  chooseMpi,
  type MpiChoice,
  type MpiFacts,
} from '../../../components/executor/launch/mpi';

export interface MpiProbeOptions {
  /** The srun to run. */
  srun: string;
  /** The agent's Slurm node: the test step runs there. */
  node: string;
  /** The pilot's `agent.mpi` ('auto' or unset: choose). */
  requested?: string;
  /** Environment of the commands (the agent's: its PATH finds the MPI its tasks use). */
  env: NodeJS.ProcessEnv;
  /** Bound on each command (the test step waits for slurmd, which may not answer). */
  timeoutMs?: number;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command; code null when it could not start or ran past the timeout. */
function run(file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number) {
  return new Promise<Ran>((resolve) => {
    execFile(
      file,
      args,
      { env, timeout: timeoutMs, encoding: 'utf8', maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const code =
          err === null ? 0 : typeof err.code === 'number' && !err.killed ? err.code : null;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * The plug-ins `srun --mpi=list` names: "MPI plugin types are...", one per indented line, then
 * "specific pmix plugin versions available: pmix_v4".
 */
export function parseSrunMpiList(out: string): string[] {
  const types: string[] = [];
  for (const line of out.split('\n')) {
    const versions = /versions available:\s*(.*)$/.exec(line);
    if (versions) types.push(...versions[1]!.split(/[\s,]+/).filter((t) => t !== ''));
    else if (/^\s+[A-Za-z0-9_]+\s*$/.test(line)) types.push(line.trim());
  }
  return types;
}

/** `ompi_info --parsable`: the version and the PMI components (`mca:pmix:<name>:...`). */
export function parseOmpiInfo(out: string): NonNullable<MpiFacts['openmpi']> | undefined {
  const version = /^ompi:version:full:(\S+)/m.exec(out)?.[1];
  if (version === undefined) return undefined;
  const names = new Set<string>();
  for (const m of out.matchAll(/^mca:pmix:([^:]+):/gm)) names.add(m[1]!);
  // s1/s2: Slurm's PMI-1/2; isolated (singletons), flux, cray: no PMIx server to talk to
  const other = new Set(['s1', 's2', 'isolated', 'flux', 'cray']);
  return {
    version,
    // OpenMPI 5 has PMIx built in and no pmix framework
    pmix: Number(version.split('.')[0]) >= 5 || [...names].some((n) => !other.has(n)),
    pmi2: names.has('s2'),
    pmi1: names.has('s1'),
  };
}

/** What srun and the MPI library on PATH say (the commands run together). */
export async function mpiFacts(srun: string, env: NodeJS.ProcessEnv, timeoutMs: number) {
  const [list, ompi, mpich] = await Promise.all([
    run(srun, ['--mpi=list'], env, timeoutMs),
    run('ompi_info', ['--parsable'], env, timeoutMs),
    run('mpichversion', [], env, timeoutMs),
  ]);
  const facts: MpiFacts = {};
  // read both streams: which one srun prints the list on is not documented
  if (list.code === 0) facts.srunTypes = parseSrunMpiList(`${list.stdout}\n${list.stderr}`);
  const openmpi = ompi.code === 0 ? parseOmpiInfo(ompi.stdout) : undefined;
  if (openmpi !== undefined) facts.openmpi = openmpi;
  if (mpich.code === 0) facts.mpich = true;
  return facts;
}

/** A one-rank step on the agent's node with `--mpi=<mpi>`, sharing its CPUs (no wait). */
function testStep(o: MpiProbeOptions, mpi: string, timeoutMs: number): Promise<Ran> {
  const args = [
    `--mpi=${mpi}`,
    '--job-name=pilotfish-mpi-probe',
    '--nodes=1',
    '--ntasks=1',
    `--nodelist=${o.node}`,
    '--overlap',
    '--mem=0',
    '--export=ALL',
    '/bin/true',
  ];
  return run(o.srun, args, o.env, timeoutMs);
}

/**
 * The pilot's PMI plug-in for srun steps, chosen once at agent start (off the tasks' path):
 * from `srun --mpi=list`, `ompi_info` and `mpichversion`, then tried with a one-rank step; a
 * choice whose step fails where `--mpi=none` runs is dropped (a slurmd that cannot load PMIx).
 */
export async function probeMpi(o: MpiProbeOptions): Promise<MpiChoice & { facts: MpiFacts }> {
  const timeoutMs = o.timeoutMs ?? 20_000;
  const facts = await mpiFacts(o.srun, o.env, timeoutMs);
  const choice = chooseMpi(o.requested, facts);
  if (choice.mpi === undefined || choice.mpi === 'none') return { ...choice, facts };
  const step = await testStep(o, choice.mpi, timeoutMs);
  let works: boolean | undefined = step.code === 0 ? true : undefined;
  if (step.code !== 0) {
    const plain = await testStep(o, 'none', timeoutMs);
    if (plain.code === 0) works = false;
  }
  const error = step.stderr.split('\n').find((l) => l.trim() !== '') ?? '';
  return { ...checkedMpi(choice, o.requested, works, error.trim()), facts };
}
