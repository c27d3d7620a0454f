/**
 * `npm run bench` runs every benchmark; `npm run bench -- NAME [NAME...]` runs the named ones.
 *
 * Figures go to stdout, one JSON line each: `{"bench","metric","value","unit",...context}`.
 * Everything meant for people goes to stderr, so `npm run bench --silent > figures.jsonl`
 * collects only figures.
 *
 * Options: `--quick` (or PILOTFISH_BENCH_QUICK=1) runs a tiny N, for a smoke check only: its
 * figures carry `quick: true` and are not measurements. `--list` lists the benchmarks.
 * Exit status: 0 all ran; 1 one failed; 2 bad arguments.
 */
import { BENCHMARKS } from './index';
import { emitterFor, type Benchmark } from './harness';

export const USAGE = 'usage: npm run bench -- [--quick] [--list] [NAME...]';

export interface Args {
  quick: boolean;
  list: boolean;
  help: boolean;
  selected: Benchmark[];
}

/** Reads the command line; returns an error message for unknown options or names. */
export function parseArgs(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  known: readonly Benchmark[] = BENCHMARKS,
): Args | { error: string } {
  let quick = ['1', 'true', 'yes'].includes(env.PILOTFISH_BENCH_QUICK ?? '');
  let list = false;
  let help = false;
  const names: string[] = [];
  for (const a of argv) {
    if (a === '--quick') quick = true;
    else if (a === '--list') list = true;
    else if (a === '--help' || a === '-h') help = true;
    else if (a.startsWith('-')) return { error: `unknown option '${a}'\n${USAGE}` };
    else names.push(a);
  }
  const knownNames = known.map((b) => b.name);
  const unknown = names.filter((n) => !knownNames.includes(n));
  if (unknown.length > 0) {
    const s = unknown.length > 1 ? 's' : '';
    return {
      error:
        `unknown benchmark${s} ${unknown.map((n) => `'${n}'`).join(', ')}; ` +
        `known: ${knownNames.join(', ')}`,
    };
  }
  const selected = names.length === 0 ? [...known] : known.filter((b) => names.includes(b.name));
  return { quick, list, help, selected };
}

export interface Io {
  stdout(line: string): void;
  stderr(line: string): void;
}

const processIo: Io = {
  stdout: (line) => void process.stdout.write(`${line}\n`),
  stderr: (line) => void process.stderr.write(`${line}\n`),
};

/** Runs the selected benchmarks one after the other; returns the exit status. */
export async function main(
  argv: readonly string[],
  io: Io = processIo,
  known: readonly Benchmark[] = BENCHMARKS,
): Promise<number> {
  const args = parseArgs(argv, process.env, known);
  if ('error' in args) {
    io.stderr(args.error);
    return 2;
  }
  if (args.help) {
    io.stderr(USAGE);
    return 0;
  }
  if (args.list) {
    for (const b of known) io.stderr(`${b.name.padEnd(12)} ${b.description}`);
    return 0;
  }
  let failures = 0;
  for (const b of args.selected) {
    io.stderr(`bench ${b.name}: ${b.description}${args.quick ? ' (quick)' : ''}`);
    const emit = emitterFor(
      b.name,
      (fig) => io.stdout(JSON.stringify(fig)),
      args.quick ? { quick: true } : {},
    );
    const started = process.hrtime.bigint();
    try {
      await b.run({ quick: args.quick, emit });
      const s = Number(process.hrtime.bigint() - started) / 1e9;
      io.stderr(`bench ${b.name}: done in ${s.toFixed(1)} s`);
    } catch (e) {
      failures++;
      io.stderr(
        `bench ${b.name}: FAILED: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
      );
    }
  }
  return failures > 0 ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
