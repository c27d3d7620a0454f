import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import type { Command } from 'commander';
import { UsageError, ValidationError } from '../../errors';
import { renderTimeline } from '../../profile/timeline';
import {
  simProfile,
  simulate,
  summarize,
  taskTimes,
  type SimulateOptions,
  type SimulationReport,
} from '../../simulator';
import { EXIT, docPath } from '../args';
import { loadWorkload } from '../run';

const EXIT_STATUS = `
exit status:
  0  simulated: every task ended DONE
  1  simulated, and some task did not end DONE (never fits, its pilot ended, a dependency
     failed: the reasons are in the summary), or a file could not be written
  2  wrong usage, an invalid workload file (the JSON path is named), or a task with no
     walltimeS and no --default-walltime (the message is on stderr)

The simulation, its assumptions and the --starts format ("pilotfish simulate"):
${docPath('cli.md')}`;

interface SimulateFlags {
  nodes?: string;
  cores?: string;
  gpus?: string;
  memMb?: string;
  runtimeMin?: string;
  defaultWalltime?: string;
  jitter?: string;
  seed?: string;
  timeline?: string;
  starts?: string;
  json?: boolean;
}

/** `pilotfish simulate WORKLOAD.json`: the run of a workload on a virtual clock. */
export function registerSimulate(program: Command, done: (code: number) => void): void {
  program
    .command('simulate')
    .summary("simulate a workload file's run: makespan, utilization, when each task starts")
    .description(
      "Runs the real schedulers (ManagerScheduler, each pilot's AgentScheduler) on a virtual " +
        "clock, each task taking its declared walltimeS, and prints the makespan, the pilots' " +
        'utilization and the tasks by final state. Nothing is started. Deterministic: the same ' +
        'file and options give the same output.',
    )
    .argument('<workload>', 'the workload file of pilotfish run (JSON: pilots, tasks)')
    .option('--nodes <n>', 'simulate one pilot of N identical nodes instead of the workload pilots')
    .option('--cores <c>', 'cores per node (with --nodes)')
    .option('--gpus <g>', 'GPUs per node (with --nodes; default 0)')
    .option('--mem-mb <m>', 'memory per node in MiB (with --nodes; default 512000)')
    .option(
      '--runtime-min <m>',
      "that pilot's runtime in minutes (default: until the last task ends)",
    )
    .option('--default-walltime <s>', 'seconds a task without walltimeS takes (default: an error)')
    .option('--jitter <f>', 'scale each duration by 1 ± up to F (uniform, from --seed; default 0)')
    .option('--seed <n>', 'seed of the --jitter draws (default 0)')
    .option('--timeline <file>', "write the run's timeline chart (HTML, as pilotfish timeline)")
    .option('--starts <file>', "write each task's pilot, start and end (JSON lines)")
    .option('--json', 'print the summary and every task as one JSON document')
    .addHelpText('after', EXIT_STATUS)
    .action((file: string, flags: SimulateFlags) => done(simulateCommand(file, flags)));
}

const say = (line: string): boolean => process.stderr.write(`pilotfish simulate: ${line}\n`);

function simulateCommand(file: string, flags: SimulateFlags): number {
  let sim: ReturnType<typeof simulate>;
  const t0 = process.hrtime.bigint();
  try {
    const opts = optionsOf(flags);
    sim = simulate(loadWorkload(file), opts, flags.timeline !== undefined);
  } catch (e) {
    if (!(e instanceof ValidationError || e instanceof UsageError)) throw e;
    say(e instanceof ValidationError ? `${file}: ${e.message}` : e.message);
    return EXIT.usage;
  }
  const report = summarize(sim);
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  try {
    if (flags.timeline !== undefined) {
      writeFileSync(flags.timeline, renderTimeline(simProfile(sim)));
    }
    if (flags.starts !== undefined) writeStarts(flags.starts, sim);
  } catch (e) {
    say(`cannot write: ${(e as Error).message}`);
    return EXIT.failed;
  }
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify({ ...report, tasks: [...taskTimes(sim)] })}\n`);
  } else {
    process.stdout.write(formatReport(report));
  }
  // the wall time differs run to run: on stderr, so stdout stays the same for the same input
  say(`${report.tasks} tasks simulated in ${wallS.toFixed(3)} s (wall)`);
  return report.counts.DONE === report.tasks ? EXIT.ok : EXIT.failed;
}

/** Numbers of the flags, each checked (a UsageError names the flag). */
function optionsOf(f: SimulateFlags): SimulateOptions {
  const opts: SimulateOptions = {};
  const num = (
    flag: string,
    v: string | undefined,
    min: number,
    integer: boolean,
  ): number | undefined => {
    if (v === undefined) return undefined;
    const x = Number(v);
    if (!Number.isFinite(x) || x < min || (integer && !Number.isInteger(x))) {
      throw new UsageError(
        `${flag} must be ${integer ? 'an integer' : 'a number'} of at least ${min}, not '${v}'`,
      );
    }
    return x;
  };
  const set = <K extends keyof SimulateOptions>(k: K, v: SimulateOptions[K] | undefined): void => {
    if (v !== undefined) opts[k] = v;
  };
  set('nodes', num('--nodes', f.nodes, 1, true));
  set('cores', num('--cores', f.cores, 1, true));
  set('gpus', num('--gpus', f.gpus, 0, true));
  set('memMb', num('--mem-mb', f.memMb, 0, true));
  set('runtimeMin', num('--runtime-min', f.runtimeMin, Number.MIN_VALUE, false));
  set('defaultWalltimeS', num('--default-walltime', f.defaultWalltime, Number.MIN_VALUE, false));
  set('seed', num('--seed', f.seed, 0, true));
  const jitter = num('--jitter', f.jitter, 0, false);
  if (jitter !== undefined && jitter >= 1) {
    throw new UsageError(`--jitter must be below 1, not '${f.jitter}'`);
  }
  set('jitter', jitter);
  return opts;
}

/** One JSON line per task, in submission order: uid, name, pilot, state, start_s, end_s. */
function writeStarts(file: string, sim: ReturnType<typeof simulate>): void {
  const fd = openSync(file, 'w');
  try {
    let buf = '';
    for (const t of taskTimes(sim)) {
      buf += `${JSON.stringify(t)}\n`;
      if (buf.length > 1 << 20) {
        writeSync(fd, buf);
        buf = '';
      }
    }
    writeSync(fd, buf);
  } finally {
    closeSync(fd);
  }
}

function formatReport(r: SimulationReport): string {
  const pct = (x: number | null): string => (x === null ? '-' : `${(x * 100).toFixed(1)}%`);
  const lines = [
    `tasks      ${r.tasks}: ${r.counts.DONE} DONE, ${r.counts.FAILED} FAILED, ${r.counts.CANCELED} CANCELED` +
      (r.counts.unfinished > 0 ? `, ${r.counts.unfinished} never ended` : ''),
    `makespan   ${r.makespan_s} s (${(r.makespan_s / 3600).toFixed(2)} h)`,
    `cores      ${r.utilization.cores}, utilization ${pct(r.utilization.core)}`,
    `gpus       ${r.utilization.gpus}, utilization ${pct(r.utilization.gpu)}`,
  ];
  for (const p of r.pilots) {
    lines.push(
      `pilot      ${p.uid} (${p.resource}): ${p.nodes} node(s), ${p.cores} cores, ${p.gpus} GPUs, ` +
        `ended at ${p.end_s} s, utilization ${pct(p.utilization)}`,
    );
  }
  for (const x of r.reasons) {
    lines.push(`${x.code.padEnd(10)} ${x.count} task(s), first ${x.first.uid}: ${x.first.message}`);
  }
  return `${lines.join('\n')}\n`;
}
