import { describe, expect, it } from '@jest/globals';
import { expandVars, taskDirRoot } from '../../../src/agent/task-dirs';

const CFG = { session: 's.1', pilot: 'p.0', sandbox: '/sess/p.0' };

describe('agent.taskDirs', () => {
  it('expands $NAME and ${NAME} from the environment, naming one that is not set', () => {
    const env = { TMPDIR: '/local/tmp', JOB: '42' };
    expect(expandVars('$TMPDIR/job${JOB}', env)).toEqual({ dir: '/local/tmp/job42' });
    expect(expandVars('/scratch/$NOPE/x', env)).toEqual({ error: '$NOPE is not set on this node' });
  });

  it("keeps the pilot's sandbox without it, on more than one node, or for a relative or unset path, saying why", () => {
    const said: string[] = [];
    const warn = (m: string) => void said.push(m);
    expect(taskDirRoot(CFG, 1, {}, warn)).toBe('/sess/p.0');
    expect(said).toEqual([]);
    expect(taskDirRoot({ ...CFG, taskDirs: '/local' }, 2, {}, warn)).toBe('/sess/p.0');
    expect(taskDirRoot({ ...CFG, taskDirs: '$TMPDIR' }, 1, {}, warn)).toBe('/sess/p.0');
    expect(taskDirRoot({ ...CFG, taskDirs: 'rel' }, 1, {}, warn)).toBe('/sess/p.0');
    expect(said).toEqual([
      "agent.taskDirs '/local' not used, tasks' directories are in the pilot's sandbox: the pilot has 2 nodes, and only this one would have them",
      "agent.taskDirs '$TMPDIR' not used, tasks' directories are in the pilot's sandbox: $TMPDIR is not set on this node",
      "agent.taskDirs 'rel' not used, tasks' directories are in the pilot's sandbox: 'rel' is not an absolute path",
    ]);
  });
});
