/**
 * The OpenAPI document's `$ref`s all local: @fastify/swagger names each registered schema by
 * its title (`#/components/schemas/TaskDescription`) but leaves the refs between the project's
 * schema files as written (`"$ref": "task-state.schema.json"`), which no OpenAPI tool can follow.
 * Each such file ref becomes the component of the schema whose `$id` ends with it.
 */
export function localRefs<T extends object>(
  doc: T,
  schemas: readonly { readonly $id: string; readonly title?: string }[],
): T {
  const byFile = new Map<string, string>();
  for (const s of schemas) {
    if (s.title !== undefined) byFile.set(s.$id.slice(s.$id.lastIndexOf('/') + 1), s.title);
  }
  const components = (doc as { components?: { schemas?: Record<string, unknown> } }).components
    ?.schemas;
  const local = (ref: string): string => {
    if (ref.startsWith('#')) return ref;
    const [file, fragment = ''] = ref.split('#');
    const title = byFile.get(file!.slice(file!.lastIndexOf('/') + 1));
    if (title === undefined) return ref;
    // a definition of it that swagger made a component of its own (Title-name)
    const def = /^\/definitions\/([^/]+)$/.exec(fragment);
    if (def !== null && components?.[`${title}-${def[1]}`] !== undefined) {
      return `#/components/schemas/${title}-${def[1]}`;
    }
    return `#/components/schemas/${title}${fragment}`;
  };
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      out[k] = k === '$ref' && typeof x === 'string' ? local(x) : walk(x);
    }
    return out;
  };
  return walk(doc) as T;
}
