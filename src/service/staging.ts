import * as path from 'node:path';
import type { StagingDirective, TaskDescription } from '../generated';
import type { ValidationIssue } from '../errors';

// A task submitted over the API stages to and from the service's host only inside the
// service's directory: its outputs land in `<dir>/artifacts/<uid>/` (listed and downloaded by
// GET /v1/tasks/{uid}/artifacts), its inputs come from `<dir>/files/`. A remote client names
// them relative; an absolute client path, or one that climbs out with `..`, is refused.

/** Where a service's tasks stage on its host. */
export interface ServiceFiles {
  /** `<dir>/artifacts`: a directory per task. */
  artifacts: string;
  /** `<dir>/files`: what the service's owner puts there for tasks to stage in. */
  files: string;
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** Whether a task stages anything on the client side (so needs its uid before it is submitted). */
export function stagesOnClient(d: TaskDescription): boolean {
  const on = (p: string, clientEnd: boolean): boolean =>
    relativeClientPath(p, clientEnd) !== undefined;
  return (
    (d.inputStaging ?? []).some((s) => on(s.source, true) || on(s.target, false)) ||
    (d.outputStaging ?? []).some((s) => on(s.source, false) || on(s.target, true))
  );
}

/**
 * The path `p` names on the client side, as written after `client://` (or as it is, on the end
 * where a scheme-less relative path is the client's: RADICAL-Pilot's default); undefined for a
 * compute-side path.
 */
function relativeClientPath(p: string, clientEnd: boolean): string | undefined {
  if (p.startsWith('client://')) return p.slice('client://'.length);
  return clientEnd && !SCHEME.test(p) && !p.startsWith('/') ? p : undefined;
}

/**
 * The description with its client-side staging paths made absolute in the service's
 * directories (`uid`'s artifacts for outputs, `files` for inputs); issues (paths relative to the
 * description) for those that may not be.
 */
export function confineStaging(
  d: TaskDescription,
  uid: string,
  dirs: ServiceFiles,
): { description: TaskDescription } | { issues: ValidationIssue[] } {
  const issues: ValidationIssue[] = [];
  const out: TaskDescription = { ...d };
  for (const [which, base] of [
    ['inputStaging', dirs.files],
    ['outputStaging', path.join(dirs.artifacts, uid)],
  ] as const) {
    const list = d[which];
    if (list === undefined) continue;
    const clientEnd = which === 'inputStaging' ? 'source' : 'target';
    out[which] = list.map((s, i) => {
      const moved: StagingDirective = { ...s };
      for (const end of ['source', 'target'] as const) {
        const p = s[end];
        const rel = relativeClientPath(p, end === clientEnd);
        if (rel === undefined) continue;
        const norm = path.posix.normalize(rel === '' ? '.' : rel);
        if (rel.startsWith('/') || norm === '..' || norm.startsWith('../')) {
          issues.push({
            path: `/${which}/${i}/${end}`,
            message: `must be a relative path that stays inside the service's ${which === 'inputStaging' ? 'files directory' : 'artifacts of the task'} (no absolute client path, no '..'), not '${p}'`,
          });
          continue;
        }
        // a trailing '/' (a directory to put the source in) is kept, once
        const dirTarget = rel.endsWith('/') || norm === '.';
        moved[end] = `client://${path.join(base, norm).replace(/\/+$/, '')}${dirTarget ? '/' : ''}`;
      }
      return moved;
    });
  }
  return issues.length > 0 ? { issues } : { description: out };
}
