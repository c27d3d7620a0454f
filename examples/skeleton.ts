/**
 * The main example: 1,000 no-op tasks plus a few that fail or time out, on a local pilot.
 * Prints how many tasks ended in each state and exits 0 when every task ended as expected.
 *   npm run example
 *   PILOTFISH_STORE=mongodb://host/db npm run example   (the same, its states in MongoDB)
 */
import { PilotManager, Session, TaskManager, type TaskDescription } from '../src';

async function main(): Promise<number> {
  // the state store: embedded by default, or a MongoDB URI (docs/state-store.md)
  const session = await Session.open({
    dir: '.pilotfish',
    store: process.env['PILOTFISH_STORE'] ?? 'embedded',
  });
  try {
    const pmgr = new PilotManager(session);
    const [pilot] = await pmgr.submitPilots([{ resource: 'local', runtimeMin: 10 }]);
    const tmgr = new TaskManager(session);
    tmgr.addPilots([pilot!]);

    const counts: Record<string, number> = {};
    tmgr.onState((_task, state) => {
      counts[state] = (counts[state] ?? 0) + 1;
    });

    const noops: TaskDescription[] = Array.from({ length: 1000 }, () => ({
      executable: '/bin/true',
    }));
    const odd: TaskDescription[] = [
      { name: 'exits-3', executable: '/bin/sh', arguments: ['-c', 'echo failing >&2; exit 3'] },
      { name: 'false', executable: '/bin/false' },
      { name: 'missing', executable: '/no/such/program' },
      { name: 'too-slow', executable: '/bin/sleep', arguments: ['30'], timeoutS: 1 },
    ];
    const t0 = Date.now();
    const tasks = await tmgr.submitTasks([...noops, ...odd]);
    await tmgr.waitTasks({ timeoutMs: 120_000 });
    const secs = (Date.now() - t0) / 1000;

    console.log(`pilot ${pilot!.uid} (${pilot!.cores} cores), session ${session.uid}`);
    console.log(
      `${tasks.length} tasks in ${secs.toFixed(2)} s (${(tasks.length / secs).toFixed(0)} tasks/s)`,
    );
    console.log('callbacks per state:');
    for (const [state, n] of Object.entries(counts)) console.log(`  ${state.padEnd(28)} ${n}`);
    for (const t of tasks.slice(1000)) {
      console.log(`  ${t.description.name!.padEnd(8)} ${t.state}: ${t.reason?.message ?? ''}`);
    }
    const ok =
      tasks.slice(0, 1000).every((t) => t.state === 'DONE') &&
      tasks.slice(1000).every((t) => t.state === 'FAILED');
    console.log(ok ? 'all tasks ended as expected' : 'UNEXPECTED final states');
    return ok ? 0 : 1;
  } finally {
    await session.close();
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
