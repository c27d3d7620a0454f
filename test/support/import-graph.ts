import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/** One relative import of a file: the line it is on and the file it names. */
export interface ImportEdge {
  line: number;
  target: string;
}

/** Every `.ts` file under `dir`, at any depth. */
export function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/**
 * The relative imports of a file's text that name a file: `import … from`, `import type … from`,
 * `export … from` (on one line or several) and `import('…')`, comments left out.
 */
export function importsOf(file: string, text: string): ImportEdge[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' '));
  const out: ImportEdge[] = [];
  code.split('\n').forEach((l, i) => {
    const line = l.replace(/(^|\s)\/\/.*$/, '');
    for (const m of line.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*)'(\.{1,2}\/[^']*)'/g)) {
      const base = path.resolve(path.dirname(file), m[1]!);
      const target = [base, `${base}.ts`, path.join(base, 'index.ts')].find(
        (c) => c.endsWith('.ts') && existsSync(c),
      );
      if (target !== undefined) out.push({ line: i + 1, target });
    }
  });
  return out;
}

/** The import graph of the `.ts` files under `dir`: file → the files it imports. */
export function importGraph(dir: string): Map<string, ImportEdge[]> {
  return new Map(tsFiles(dir).map((f) => [f, importsOf(f, readFileSync(f, 'utf8'))]));
}

/**
 * The import cycles of a graph: one per strongly connected component of more than one file (or a
 * file that imports itself), as the shortest way round from its first file back to it, e.g.
 * `['a.ts', 'b.ts', 'a.ts']`. Sorted, so a report reads the same every time.
 */
export function cyclesOf(graph: ReadonlyMap<string, readonly { target: string }[]>): string[][] {
  const next = (v: string): string[] => [...new Set((graph.get(v) ?? []).map((e) => e.target))];
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let counter = 0;
  // Tarjan's algorithm, with an explicit stack so that a deep graph cannot overflow the call stack
  for (const root of [...graph.keys()].sort()) {
    if (index.has(root)) continue;
    const work: { v: string; out: string[]; at: number }[] = [];
    const open = (v: string): void => {
      index.set(v, counter);
      low.set(v, counter++);
      stack.push(v);
      onStack.add(v);
      work.push({ v, out: next(v), at: 0 });
    };
    open(root);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      if (top.at < top.out.length) {
        const w = top.out[top.at++]!;
        if (!index.has(w)) open(w);
        else if (onStack.has(w)) low.set(top.v, Math.min(low.get(top.v)!, index.get(w)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.v, Math.min(low.get(parent.v)!, low.get(top.v)!));
      if (low.get(top.v) !== index.get(top.v)) continue;
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== top.v);
      if (component.length > 1 || next(top.v).includes(top.v)) components.push(component);
    }
  }
  return components.map((c) => shortestCycle(c.sort(), next)).sort((a, b) => cmp(a[0]!, b[0]!));
}

/** The shortest path from the component's first file back to it, inside the component. */
function shortestCycle(component: string[], next: (v: string) => string[]): string[] {
  const inside = new Set(component);
  const start = component[0]!;
  const from = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!;
    for (const w of next(v).sort()) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const way = [v];
        while (way[0] !== start) way.unshift(from.get(way[0]!)!);
        return [...way, start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start]; // unreachable for a component of Tarjan's
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
