import { UsageError } from '../../errors';
import { normalPath, pathProblem } from '../../transport/file-paths';

export type FileAccess = 'read' | 'write';
type Grants = Record<FileAccess, Set<string>>;

/** What a task may transfer: client paths its agent may read, and targets it may write. */
export interface FileGrant {
  read?: readonly string[];
  write?: readonly string[];
}

/**
 * Which client files each pilot's tasks may read or write over the file channel: exactly the
 * paths the session granted them (the task's transfer directives), nothing else. A pilot may
 * speak only of what it was given (docs/security.md), files included.
 */
export class FileGrants {
  /** pilot -> task -> access -> paths */
  private readonly grants = new Map<string, Map<string, Grants>>();

  /** Adds to what `task` on `pilot` may transfer; paths are normalized, and must be absolute. */
  allow(pilot: string, task: string, grant: FileGrant): void {
    const checked = (access: FileAccess): string[] =>
      (grant[access] ?? []).map((p) => {
        const n = normalPath(p);
        const problem = pathProblem(n);
        if (problem !== undefined) {
          throw new UsageError(`cannot allow ${access} of '${p}' for task ${task}: it ${problem}`);
        }
        return n;
      });
    const read = checked('read');
    const write = checked('write');
    let tasks = this.grants.get(pilot);
    if (tasks === undefined) this.grants.set(pilot, (tasks = new Map<string, Grants>()));
    let own = tasks.get(task);
    if (own === undefined) tasks.set(task, (own = { read: new Set(), write: new Set() }));
    for (const p of read) own.read.add(p);
    for (const p of write) own.write.add(p);
  }

  /** Drops what `task` on `pilot` may transfer (its staging is over). */
  forget(pilot: string, task: string): void {
    const tasks = this.grants.get(pilot);
    tasks?.delete(task);
    if (tasks?.size === 0) this.grants.delete(pilot);
  }

  /** Drops every grant of `pilot` (it ended). */
  forgetPilot(pilot: string): void {
    this.grants.delete(pilot);
  }

  /** Why `task` on `pilot` may not `access` the client path `p`, or undefined if it may. */
  check(pilot: string, task: string, access: FileAccess, p: string): string | undefined {
    const problem = pathProblem(p);
    if (problem !== undefined) return `the path ${problem}`;
    const own = this.grants.get(pilot)?.get(task);
    if (own === undefined) return `task ${task} of ${pilot} was granted no transfers`;
    if (!own[access].has(p)) return `task ${task} of ${pilot} may not ${access} ${p}`;
    return undefined;
  }

  /** Whether `task` on `pilot` holds any grant (its open transfers end when it loses them). */
  has(pilot: string, task: string): boolean {
    return this.grants.get(pilot)?.has(task) === true;
  }
}
