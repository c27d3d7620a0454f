import { existsSync, readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { buildProgram } from '../../../src/cli/program';

const ROOT = path.resolve(__dirname, '../../..');

/** The user's docs (the README and every page under docs/), the changelog and CONTRIBUTING. */
const DOCS = [
  'README.md',
  'CHANGELOG.md',
  'CONTRIBUTING.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, spaces to '-', punctuation other than '-' dropped. */
const anchor = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\s-]/g, '')
    .replace(/\s/g, '-');

function anchors(file: string): Set<string> {
  const text = readFileSync(path.join(ROOT, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)));
}

/** Every Markdown link of a doc that is not a URL, as [link, target file relative to ROOT]. */
function localLinks(file: string): [string, string, string | undefined][] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((l) => !/^[a-z]+:/.test(l))
    .map((l) => {
      const [p, hash] = l.split('#');
      const target =
        p === '' ? file : path.relative(ROOT, path.resolve(ROOT, path.dirname(file), p!));
      return [l, target, hash];
    });
}

describe('the docs point only at what the project has', () => {
  const program = buildProgram({ out: () => undefined, err: () => undefined }, () => undefined);
  const commands = new Set(program.commands.map((c) => c.name()));

  it.each(DOCS)('%s: every link names a file inside the project, and a heading of it', (file) => {
    const wrong: string[] = [];
    for (const [link, target, hash] of localLinks(file)) {
      if (target.startsWith('..') || path.isAbsolute(target)) wrong.push(`${link}: outside`);
      else if (!existsSync(path.join(ROOT, target))) wrong.push(`${link}: no such file`);
      else if (hash !== undefined && target.endsWith('.md') && !anchors(target).has(hash)) {
        // the CLI index links every command's section: one still to come is not an error
        const command = /^pilotfish-(\w+)$/.exec(hash)?.[1];
        const pending = target === 'docs/cli.md' && command !== undefined && !commands.has(command);
        if (!pending) wrong.push(`${link}: no such heading`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('no doc, and no comment in src/, names files kept outside the project', () => {
    const outside = /DESIGN\.md|house-style|notes\/README|\.\.\/shared\/|\/work\//;
    const walk = (dir: string): string[] =>
      readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)],
      );
    const sources = walk('src').filter((f) => f.endsWith('.ts'));
    const hits = [...DOCS, ...sources].flatMap((file) =>
      readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
        // src/components/*/ import from their sibling folder 'shared': code, not a reference
        .filter(({ line }) => outside.test(line) && !/^import |from '\.\.\/shared\//.test(line))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    expect(hits).toEqual([]);
  });
});
