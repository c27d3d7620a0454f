/**
 * CPU profiles of every Node process of a run, children included. Node 20 refuses
 * `--cpu-prof` in NODE_OPTIONS, but accepts `--require`, and NODE_OPTIONS reaches the local
 * agent and its spawner helpers (they inherit the environment). So:
 *
 *   NODE_OPTIONS="--require $PWD/dist/bench/cpu-prof-preload.js" \
 *   PILOTFISH_CPU_PROF_DIR=/tmp/pf-prof PILOTFISH_BENCH_PEERS=0 node dist/bench/run.js e2e
 *   node dist/bench/profile-summary.js /tmp/pf-prof
 *
 * Without PILOTFISH_CPU_PROF_DIR this module does nothing. With it, it starts the V8 sampling
 * profiler through `node:inspector` (1 ms interval, as `--cpu-prof`) and writes
 * `<script>.<pid>.cpuprofile` there when the process exits normally (`exit` event, also after
 * process.exit()). A process killed by a signal writes nothing, as with `--cpu-prof`.
 */
import * as fs from 'node:fs';
import * as inspector from 'node:inspector';
import * as path from 'node:path';

const dir = process.env.PILOTFISH_CPU_PROF_DIR;

if (dir !== undefined && dir !== '') {
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1_000 });
  session.post('Profiler.start');
  process.once('exit', () => {
    // The in-thread inspector session answers synchronously, so this completes before exit.
    session.post('Profiler.stop', (err, res) => {
      if (err !== null) {
        process.stderr.write(`cpu-prof-preload: ${err.message}\n`);
        return;
      }
      const script = path.basename(process.argv[1] ?? 'node');
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(
        path.join(dir, `${script}.${process.pid}.cpuprofile`),
        JSON.stringify(res.profile),
      );
    });
  });
}
