import type { Command } from 'commander';
import type { Explanation } from '../../client/tasks/explain';
import { readProfile } from '../../profile/read';
import { EXIT } from '../args';
import { ask } from '../control-client';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';
import { explainProfile } from '../session-info';
import { explanationLine } from '../status-format';
import { usageErrors } from '../usage';

const EXIT_STATUS = `
exit status:
  0  the task was explained
  1  the session has no task with that uid, or pilotfish failed (message on stderr)
  2  wrong usage, or no such session (message on stderr)

A live session answers through its control socket (what a waiting task waits for); of an ended
one, the store tells the task's last state and, if it did not end DONE, why.`;

/** `pilotfish explain SESSION UID`: why a task is where it is. */
export function registerExplain(program: Command, done: (code: number) => void): void {
  program
    .command('explain')
    .summary('say why a task is where it is (what it waits for, or how it ended)')
    .description(
      "Shows a task's state and, while it waits, what for (a pilot, dependencies, resources, " +
        'a reservation, a tag, or never); once it ended other than DONE, its reason.',
    )
    .argument('<session>', 'the session: its uid, or the path of its directory')
    .argument('<uid>', 'the task')
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option('--json', 'print the explanation as one JSON document')
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string, uid: string, opts: { dir: string; json?: boolean }) =>
      done(await usageErrors(() => explain(resolveSessionDir(session, opts.dir), uid, opts))),
    );
}

async function explain(dir: string, uid: string, opts: { json?: boolean }): Promise<number> {
  let e: Explanation | undefined;
  const reply = await ask(dir, { op: 'explain', uid });
  if (reply?.ok === false) {
    process.stderr.write(`pilotfish: ${reply.error.code}: ${reply.error.message}\n`);
    return EXIT.failed;
  }
  if (reply !== undefined) e = reply.result ?? undefined;
  else {
    const task = (await readProfile(dir)).tasks.find((t) => t.uid === uid);
    if (task !== undefined) e = explainProfile(task);
  }
  if (e === undefined) {
    process.stderr.write(`pilotfish: session ${dir} has no task '${uid}'\n`);
    return EXIT.failed;
  }
  process.stdout.write(
    opts.json === true ? JSON.stringify(e) + '\n' : explanationLine(e, Date.now(), true) + '\n',
  );
  return EXIT.ok;
}
