import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { EXIT, docPath } from '../args';

// `pilotfish lab start|stop|env`: a Slurm cluster on this one machine, to try Slurm pilots
// where there is no allocation (docs/guide.md, "A Slurm pilot"). The shipped
// scripts/slurm-up.sh and slurm-down.sh do the work (the project's tests use the same lab):
// Debian's Slurm and munge, one slurmctld, one slurmd per fake node in its own UTS namespace,
// all under one directory with ports of its own. Starting it needs root (slurmd runs jobs).

/** Where the lab lives unless --lab says: the one scripts/slurm-up.sh uses by default. */
const DEFAULT_LAB = '/tmp/pilotfish-slurm';

const EXIT_STATUS = `
exit status:
  0  done (start, env: the exports are on stdout)
  1  the lab could not be started or stopped, or is not up (env); the reason is on stderr
  2  wrong usage

Try a Slurm pilot on one machine: ${docPath('guide.md')} ("A Slurm pilot").`;

/** The shipped script `name`: beside dist/ in the package, or in the repository. */
function script(name: string): string {
  const candidates = [
    path.resolve(__dirname, '..', '..', '..', '..', 'scripts', name),
    path.resolve(__dirname, '..', '..', '..', 'scripts', name),
  ];
  const found = candidates.find((c) => existsSync(c));
  if (found === undefined) throw new Error(`${name} not found at ${candidates[0]}`);
  return found;
}

/**
 * The `export SLURM_CONF=...` lines of a lab that is up (its env.sh, which slurm-up.sh writes
 * once every node answers and slurm-down.sh removes, and a controller that answers a ping), or
 * undefined.
 */
export function labExports(lab: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(lab, 'env.sh'), 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n').filter((l) => /^export [A-Z_]+=\S+$/.test(l));
  const conf = /^export SLURM_CONF=(\S+)$/m.exec(text)?.[1];
  if (conf === undefined) return undefined;
  const ping = spawnSync('scontrol', ['ping'], {
    env: { ...process.env, SLURM_CONF: conf },
    encoding: 'utf8',
    timeout: 5_000,
  });
  return ping.status === 0 && /is UP/.test(ping.stdout) ? `${lines.join('\n')}\n` : undefined;
}

function positive(name: string, value: string, max: number): number | string {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) return `${name} must be 1-${max}, got '${value}'`;
  return n;
}

export function registerLab(program: Command, done: (code: number) => void): void {
  const lab = program
    .command('lab')
    .summary('start, stop or name a Slurm cluster on this machine, to try Slurm pilots')
    .description(
      "A lab cluster of Debian's Slurm on this one machine: one controller and a slurmd per " +
        'fake node (n1, n2, ...), all under one directory with ports of its own, so it never ' +
        'meets a system Slurm. `start` (as root: it installs slurm and munge with apt-get ' +
        'when missing) prints on stdout what to export for sbatch and a Slurm pilot to find ' +
        'it: eval "$(sudo pilotfish lab start)".',
    )
    .addHelpText('after', EXIT_STATUS);
  lab
    .command('start')
    .description('start the lab (again with other settings: it restarts) and print its exports')
    .option('--nodes <n>', 'fake nodes n1..nN, one slurmd each (1-64)', '8')
    .option('--cpus-per-node <n>', 'CPUs each node declares (may exceed the real ones)', '2')
    .option('--lab <dir>', 'its directory: config, state, logs', DEFAULT_LAB)
    .option('--port <port>', "its controller's port; node X's slurmd listens on PORT+X", '17817')
    .action((opts: { nodes: string; cpusPerNode: string; lab: string; port: string }) => {
      const nodes = positive('--nodes', opts.nodes, 64);
      const cpus = positive('--cpus-per-node', opts.cpusPerNode, 4096);
      const port = positive('--port', opts.port, 65535);
      const bad = [nodes, cpus, port].find((x) => typeof x === 'string');
      if (bad !== undefined) {
        process.stderr.write(`pilotfish lab: ${bad}\n`);
        return done(EXIT.usage);
      }
      const dir = path.resolve(opts.lab);
      const r = spawnSync('bash', [script('slurm-up.sh')], {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: {
          ...process.env,
          PILOTFISH_SLURM_LAB: dir,
          PILOTFISH_SLURM_NODES: String(nodes),
          PILOTFISH_SLURM_CPUS_PER_NODE: String(cpus),
          PILOTFISH_SLURM_PORT: String(port),
        },
      });
      const exports = labExports(dir);
      // without root the script says what is missing and exits 0: no env.sh, not up
      if (r.status !== 0 || exports === undefined) {
        process.stderr.write(`pilotfish lab: the lab in ${dir} is not up (see above)\n`);
        return done(EXIT.failed);
      }
      process.stdout.write(exports);
      process.stderr.write(
        `pilotfish lab: up, ${String(nodes)} nodes; in your shell: eval "$(pilotfish lab env${dir === DEFAULT_LAB ? '' : ` --lab ${dir}`})"\n`,
      );
      return done(EXIT.ok);
    });
  lab
    .command('stop')
    .description('stop the lab: its daemons, the jobs they run')
    .option('--lab <dir>', 'its directory', DEFAULT_LAB)
    .option('--purge', 'also delete its config, state, logs and munge key')
    .action((opts: { lab: string; purge?: boolean }) => {
      const r = spawnSync('bash', [script('slurm-down.sh')], {
        stdio: ['ignore', 'inherit', 'inherit'],
        env: {
          ...process.env,
          PILOTFISH_SLURM_LAB: path.resolve(opts.lab),
          PURGE: opts.purge === true ? '1' : '0',
        },
      });
      return done(r.status === 0 ? EXIT.ok : EXIT.failed);
    });
  lab
    .command('env')
    .description('print what to export for sbatch and a Slurm pilot to find the lab')
    .option('--lab <dir>', 'its directory', DEFAULT_LAB)
    .action((opts: { lab: string }) => {
      const dir = path.resolve(opts.lab);
      const exports = labExports(dir);
      if (exports === undefined) {
        process.stderr.write(
          `pilotfish lab: no lab is up in ${dir}: start one with 'sudo pilotfish lab start'\n`,
        );
        return done(EXIT.failed);
      }
      process.stdout.write(exports);
      return done(EXIT.ok);
    });
}
