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

/**
 * Path of a native part that scripts/build-native.sh builds into dist/native/, or undefined when
 * it is not built. `root` is the directory above `src/` of the caller: `dist/` when it runs from
 * the build output, the repository under ts-jest.
 */
export function builtNative(name: string, root: string): string | undefined {
  for (const candidate of [
    path.join(root, 'native', name),
    path.join(root, 'dist', 'native', name),
  ]) {
    if (fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}
