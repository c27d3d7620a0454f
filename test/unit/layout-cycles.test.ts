import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { cyclesOf, importGraph, type ImportEdge } from '../support/import-graph';

const ROOT = path.resolve(__dirname, '../..');
const SRC = path.join(ROOT, 'src');
const CLIENT = path.join(SRC, 'client');
const rel = (abs: string): string => path.relative(ROOT, abs);

const graph = importGraph(SRC);

describe('import cycles', () => {
  it('has none in src/, type-only imports included', () => {
    const cycles = cyclesOf(graph).map((c) => c.map(rel).join(' → '));
    expect(cycles).toEqual([]);
  });

  it('names each cycle by its files, the shortest way round from its first file', () => {
    const g = new Map<string, { target: string }[]>(
      Object.entries({
        'a.ts': ['b.ts'],
        'b.ts': ['c.ts', 'd.ts'],
        'c.ts': ['a.ts'],
        'd.ts': ['a.ts', 'e.ts'],
        'e.ts': [],
        'f.ts': ['f.ts'],
        'g.ts': ['a.ts', 'h.ts'],
        'h.ts': ['g.ts'],
      }).map(([k, v]) => [k, v.map((target) => ({ target }))]),
    );
    expect(cyclesOf(g)).toEqual([
      ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
      ['f.ts', 'f.ts'],
      ['g.ts', 'h.ts', 'g.ts'],
    ]);
  });

  describe('on files', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pf-cycles-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const write = (name: string, text: string): void => writeFileSync(path.join(dir, name), text);

    it('sees a cycle closed by type-only imports, re-exports over several lines and index files', () => {
      write('a.ts', "import type { B } from './b';\nexport type A = { b?: B };\n");
      write('b.ts', "export {\n  type C,\n} from './sub';\nexport type B = number;\n");
      mkdirSync(path.join(dir, 'sub'));
      write('sub/index.ts', "export type C = import('../a').A;\n");
      write('c.ts', "// import { A } from './a'\n/* import { B } from './b' */\nexport {};\n");
      const cycles = cyclesOf(importGraph(dir)).map((c) => c.map((f) => path.relative(dir, f)));
      expect(cycles).toEqual([['a.ts', 'b.ts', 'sub/index.ts', 'a.ts']]);
    });
  });
});

/** The body of a `## title` section of the design doc. */
function section(title: string): string {
  const doc = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
  const start = doc.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`docs/architecture.md has no "## ${title}" section`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

describe("the client's rooms", () => {
  /** The rooms of src/client/, lowest first, as "The client's rooms" lists them. */
  const ROOMS = [...section("The client's rooms").matchAll(/^- `([\w-]+)\/`/gm)].map((m) => m[1]!);
  /** The room of a file of src/client/, or undefined for a file at its top. */
  const roomOf = (abs: string): string | undefined => {
    const parts = path.relative(CLIENT, abs).split(path.sep);
    return parts.length > 1 ? parts[0] : undefined;
  };
  const clientImports: [string, ImportEdge][] = [...graph]
    .filter(([f]) => !path.relative(CLIENT, f).startsWith('..'))
    .flatMap(([f, edges]) =>
      edges
        .filter((e) => !path.relative(CLIENT, e.target).startsWith('..'))
        .map((e): [string, ImportEdge] => [f, e]),
    );

  it('lists every room of src/client/ in docs/architecture.md', () => {
    const folders = readdirSync(CLIENT, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect([...ROOMS].sort()).toEqual(folders.sort());
  });

  it('has no room import a room listed after it', () => {
    const wrong = clientImports
      .filter(([f, e]) => {
        const from = roomOf(f);
        const to = roomOf(e.target);
        return from !== undefined && to !== undefined && ROOMS.indexOf(to) > ROOMS.indexOf(from);
      })
      .map(([f, e]) => `${rel(f)}:${e.line}: room '${roomOf(f)}' imports '${roomOf(e.target)}'`);
    expect(wrong).toEqual([]);
  });

  it('has no room import a facade (a file at the top of src/client/ that imports a room)', () => {
    const facades = new Set(
      clientImports
        .filter(([f, e]) => roomOf(f) === undefined && roomOf(e.target) !== undefined)
        .map(([f]) => f),
    );
    const wrong = clientImports
      .filter(([f, e]) => roomOf(f) !== undefined && facades.has(e.target))
      .map(([f, e]) => `${rel(f)}:${e.line}: imports the facade ${rel(e.target)}`);
    expect(wrong).toEqual([]);
  });
});
