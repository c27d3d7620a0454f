import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from '@jest/globals';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * The schemas users write (descriptions, options, workload files), the one launchers write for
 * agents and the control protocol's (what a client of the control socket, or of an HTTP API over
 * the same handlers, sends and reads): editors show a field's `description` on hover, and
 * src/generated carries it as a doc comment, so none may be missing.
 */
const USER_SCHEMAS = [
  'task-description',
  'pilot-description',
  'staging-directive',
  'labels',
  'workload',
  'session-options',
  'agent-config',
  'wait-reason',
  'control-request',
  'control-reply',
];

type Node = Record<string, unknown>;

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * JSON pointers of the fields and objects that have no description. A field is an entry of
 * `properties`; an object is a schema with `properties`. `if`/`then`/`else`/`not` only restate
 * fields declared elsewhere (conditions), so they are not walked; boolean schemas say nothing.
 */
function undescribed(node: unknown, at = ''): string[] {
  if (!isNode(node)) return [];
  const out: string[] = [];
  if (isNode(node.properties) && typeof node.description !== 'string') out.push(at || '(root)');
  if (isNode(node.properties)) {
    for (const [name, field] of Object.entries(node.properties)) {
      const here = `${at}/properties/${name}`;
      if (isNode(field) && typeof field.description !== 'string') out.push(here);
      out.push(...undescribed(field, here).filter((p) => p !== here));
    }
  }
  for (const key of ['items', 'additionalProperties'] as const) {
    out.push(...undescribed(node[key], `${at}/${key}`));
  }
  for (const key of ['oneOf', 'anyOf', 'allOf'] as const) {
    const list = node[key];
    if (Array.isArray(list)) {
      list.forEach((s, i) => out.push(...undescribed(s, `${at}/${key}/${i}`)));
    }
  }
  return out;
}

describe('user-facing schemas', () => {
  it.each(USER_SCHEMAS)('%s: every field and object has a description', (name) => {
    const file = path.join(ROOT, 'schemas', `${name}.schema.json`);
    const schema = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    expect(undescribed(schema)).toEqual([]);
  });

  it('the walk finds a field without one, at any depth', () => {
    const schema = {
      description: 'x',
      properties: {
        a: { type: 'string' },
        b: {
          description: 'b',
          type: 'array',
          items: { oneOf: [{ type: 'string' }, { properties: { c: { description: 'c' } } }] },
        },
        d: { description: 'd', properties: { e: { description: 'e' }, f: {} } },
      },
      if: { properties: { a: { const: 'z' } } },
      then: { properties: { a: true } },
    };
    expect(undescribed(schema)).toEqual([
      '/properties/a',
      '/properties/b/items/oneOf/1',
      '/properties/d/properties/f',
    ]);
  });
});
