import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Path of the compiled JS for a module that must run as its own process (agent, spawner).
 * From dist/ it sits next to the caller; under ts-jest (sources in src/) the build output in
 * dist/ is used, which `npm test` builds first.
 */
export function compiledSibling(callerDir: string, relFromCaller: string): string {
  const direct = path.join(callerDir, `${relFromCaller}.js`);
  if (fs.existsSync(direct)) return direct;
  const repo = path.resolve(__dirname, '..', '..');
  const rel = path.relative(repo, path.join(callerDir, relFromCaller));
  return path.join(repo, 'dist', `${rel}.js`);
}
