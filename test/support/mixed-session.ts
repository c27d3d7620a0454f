import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { mulberry32 } from '../../src/lib/prng';
import { listSessionDirs } from '../../src/cli/session-dir';
import { runCli } from './cli';

/**
 * Runs a real session with `pilotfish run`: `tasks` sleeps of mixed widths (1-4 cores) and
 * durations (0.1-0.6 s, seeded) on a local pilot of `cores` cores, one of which fails.
 * Returns the session's directory.
 */
export async function runMixedSession(dir: string, tasks = 40, cores = 8): Promise<string> {
  const rnd = mulberry32(16);
  const file = path.join(dir, 'mixed.json');
  writeFileSync(
    file,
    JSON.stringify({
      pilots: [{ resource: 'local', cores }],
      tasks: [
        ...Array.from({ length: tasks - 1 }, (_, i) => ({
          name: `sleep-${i}`,
          executable: '/bin/sleep',
          arguments: [(0.1 + rnd() * 0.5).toFixed(2)],
          coresPerRank: 1 + Math.floor(rnd() * 4),
        })),
        { name: 'fails', executable: '/bin/false' },
      ],
    }),
  );
  const r = await runCli(['run', file, '--dir', dir]);
  if (r.code !== 1) throw new Error(`pilotfish run exited ${r.code}: ${r.stderr}${r.stdout}`);
  const session = listSessionDirs(dir)[0];
  if (session === undefined) throw new Error(`no session in ${dir}`);
  return session;
}
