import type { Command } from 'commander';
import type { Explanation } from '../../client/tasks/explain';
import { readProfile } from '../../profile/read';
import { EXIT } from '../args';
import { ask } from '../control-client';
import { parseControlReply } from '../../lib/validate';
import {
  addServerOptions,
  requestJson,
  serverErrors,
  serverOf,
  taskRoute,
  usageFailure,
  wantsServer,
  type Server,
  type ServerFlags,
} from '../server-client';
import { DEFAULT_SESSIONS_DIR, resolveSessionDir } from '../session-dir';
import { explainProfile } from '../session-info';
import { explanationLine } from '../status-format';
import { usageErrors } from '../usage';

const EXIT_STATUS = `
exit status:
  0  the task was explained
  1  the session has no task with that uid, or pilotfish failed (message on stderr)
  2  wrong usage, or no such session (message on stderr)
  4  with --server: no server answers at the URL (message on stderr)

A live session answers through its control socket (what a waiting task waits for); of an ended
one, the store tells the task's last state and, if it did not end DONE, why. With --server URL
(no SESSION), the service answers (GET /v1/tasks/{uid}).`;

interface ExplainFlags extends ServerFlags {
  dir: string;
  json?: boolean;
}

/** `pilotfish explain SESSION UID`: why a task is where it is. */
export function registerExplain(program: Command, done: (code: number) => void): void {
  const cmd = program
    .command('explain')
    .summary('say why a task is where it is (what it waits for, or how it ended)')
    .description(
      "Shows a task's state and, while it waits, what for (a pilot, dependencies, resources, " +
        'a reservation, a tag, or never); once it ended other than DONE, its reason.',
    )
    .argument('[session]', 'the session: its uid, or the path of its directory (not with --server)')
    .argument('[uid]', 'the task')
    .usage('[options] <session> <uid> | --server <url> <uid>')
    .option('--dir <sessions-dir>', 'where the sessions are', DEFAULT_SESSIONS_DIR)
    .option('--json', 'print the explanation as one JSON document');
  addServerOptions(cmd)
    .addHelpText('after', EXIT_STATUS)
    .action(async (session: string | undefined, uid: string | undefined, opts: ExplainFlags) => {
      if (wantsServer(opts)) {
        if (uid !== undefined) {
          return done(usageFailure('explain', 'with --server, give the UID alone (no SESSION)'));
        }
        if (session === undefined) return done(usageFailure('explain', "missing argument 'uid'"));
        return done(await serverErrors(async () => remoteExplain(serverOf(opts)!, session, opts)));
      }
      if (session === undefined || uid === undefined) {
        const what = session === undefined ? 'SESSION and UID' : 'UID';
        return done(usageFailure('explain', `missing ${what} (or --server URL and the UID)`));
      }
      done(await usageErrors(() => explain(resolveSessionDir(session, opts.dir), uid, opts)));
    });
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
  return show(e, opts);
}

function show(e: Explanation, opts: { json?: boolean }): number {
  process.stdout.write(
    opts.json === true ? JSON.stringify(e) + '\n' : explanationLine(e, Date.now(), true) + '\n',
  );
  return EXIT.ok;
}

/** What GET /v1/tasks/{uid} answers that an explanation is made of. */
export interface TaskDetail {
  uid: string;
  name?: string;
  state: Explanation['state'];
  attempt: number;
  pilot?: string;
  reason?: Explanation['reason'];
  history?: { state: string; ts?: number }[];
  explanation?: unknown;
}

/**
 * The explanation of a task the service has ended: its state, since when (its last entry of
 * history), its pilot and attempt, and why when it did not end DONE (as the store tells it).
 */
export function explainDetail(t: TaskDetail): Explanation {
  const since = t.history?.findLast((h) => h.state === t.state)?.ts;
  return {
    uid: t.uid,
    ...(t.name !== undefined ? { name: t.name } : {}),
    state: t.state,
    attempt: t.attempt,
    ...(t.pilot !== undefined ? { pilot: t.pilot } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(t.reason !== undefined && t.state !== 'DONE' ? { reason: t.reason } : {}),
  };
}

/** `explain --server URL UID`: the service's explanation while it waits, else how it ended. */
async function remoteExplain(server: Server, uid: string, opts: ExplainFlags): Promise<number> {
  const t = await requestJson<TaskDetail>(server, 'GET', taskRoute(uid));
  if (t.explanation === undefined) return show(explainDetail(t), opts);
  // checked as the control socket's reply is, before it is believed
  const reply = parseControlReply('explain', { ok: true, result: t.explanation });
  const e = (reply as { result: Explanation | null }).result;
  return show(e ?? explainDetail(t), opts);
}
