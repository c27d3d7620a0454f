import type { SpawnSpec } from '../../src/components/executor/effects';

/** A spawn of /bin/true with output to /dev/null, as the pool's unit tests give it. */
export function trueSpec(uid: string, limits?: SpawnSpec['limits']): SpawnSpec {
  return {
    uid,
    executable: '/bin/true',
    args: [],
    env: {},
    cwd: '/',
    stdoutPath: '/dev/null',
    stderrPath: '/dev/null',
    ...(limits === undefined ? {} : { limits }),
  };
}
