import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';

const ROOT = path.resolve(__dirname, '../../..');

/** Every file under the given top-level folders, as paths relative to the root. */
function files(...tops: string[]): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)],
    );
  return tops.flatMap(walk);
}

describe('docs/architecture.md', () => {
  it('walks one task through files that exist', () => {
    const doc = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
    const walk = doc.split('## One task through the code')[1]!.split('\n## ')[0]!;
    const named = [...walk.matchAll(/`([\w./-]+\.(?:ts|c))`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(30);
    const all = files('src', 'native');
    const missing = named.filter((n) => !all.some((f) => f === n || f.endsWith(`/${n}`)));
    expect(missing).toEqual([]);
  });

  it('says how to add a batch system with files that exist', () => {
    const doc = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
    const section = doc.split('## How to add a batch system')[1]!.split('\n## ')[0]!;
    const named = [...section.matchAll(/`([\w./-]+\.(?:ts|json|sh))`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(15);
    const all = files('src', 'test', 'schemas', 'scripts');
    const missing = named.filter((n) => !all.some((f) => f === n || f.endsWith(`/${n}`)));
    expect(missing).toEqual([]);
  });
});
