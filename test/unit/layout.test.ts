import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';

/**
 * The layers of src/, lowest first: a file may import its own layer or a lower one. Layers on
 * one rank are siblings and import neither each other nor anything above. The "Layers" section
 * of docs/architecture.md lists the same ranks (checked below).
 */
const LAYERS: readonly (readonly string[])[] = [
  ['generated'],
  ['errors'],
  ['lib'],
  ['states'],
  ['transport'],
  ['components'],
  ['updater'],
  ['profile'],
  ['agent', 'client'],
  ['router'],
  ['simulator', 'service'],
  ['cli', 'index.ts'],
];

const MAX_LINES = 450;
const ROOT = path.resolve(__dirname, '../..');
const SRC = path.join(ROOT, 'src');
const DOC = path.join(ROOT, 'docs/architecture.md');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** The layer a path under src/ belongs to: its first folder, or the file's own name at the top. */
function layerOf(abs: string): string {
  const first = path.relative(SRC, abs).split(path.sep)[0]!;
  return first.endsWith('.ts') && first !== 'index.ts' ? first.slice(0, -3) : first;
}

function rankOf(layer: string): number {
  return LAYERS.findIndex((rank) => rank.includes(layer));
}

/** The body of a `## title` section of the design doc. */
function section(title: string): string {
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`docs/architecture.md has no "## ${title}" section`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

/** Relative specifiers of `import … from`, `export … from` and `import('…')`, with their line. */
function relativeImports(text: string): { line: number; spec: string }[] {
  const out: { line: number; spec: string }[] = [];
  text.split('\n').forEach((l, i) => {
    for (const m of l.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*)'(\.{1,2}\/[^']*)'/g)) {
      out.push({ line: i + 1, spec: m[1]! });
    }
  });
  return out;
}

const files = tsFiles(SRC);
const rel = (abs: string): string => path.relative(ROOT, abs);

describe('layers', () => {
  it('places every file of src/ in a layer', () => {
    const unplaced = files.map((f) => layerOf(f)).filter((l) => rankOf(l) < 0);
    expect([...new Set(unplaced)]).toEqual([]);
  });

  it('has no import from a lower layer to a higher one, nor between siblings', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      for (const { line, spec } of relativeImports(readFileSync(file, 'utf8'))) {
        const target = path.resolve(path.dirname(file), spec);
        if (path.relative(SRC, target).startsWith('..')) continue; // schemas/*.json
        const to = layerOf(target);
        if (to === from || rankOf(to) < rankOf(from)) continue;
        const how = rankOf(to) === rankOf(from) ? 'sibling' : 'higher';
        wrong.push(
          `${rel(file)}:${line}: layer '${from}' imports ${how} layer '${to}' ('${spec}')`,
        );
      }
    }
    expect(wrong).toEqual([]);
  });

  it('matches the "Layers" list of docs/architecture.md', () => {
    const listed = [...section('Layers').matchAll(/^\d+\. (.+)$/gm)].map((m) =>
      [...m[1]!.matchAll(/`([^`]+)`/g)].map((n) => n[1]!.replace(/^src\/|\/$/g, '')),
    );
    expect(listed).toEqual(LAYERS);
  });
});

describe('file size', () => {
  const lines = (f: string): number => readFileSync(f, 'utf8').split('\n').length - 1;

  it(`keeps files of src/ at ${MAX_LINES} lines or less`, () => {
    const long = files
      .filter((f) => layerOf(f) !== 'generated' && lines(f) > MAX_LINES)
      .map((f) => `${rel(f)} (${lines(f)} lines)`);
    expect(long).toEqual([]);
  });
});
