import { ValidationError } from '../../errors';

/**
 * The uids a bulk of descriptions chose, once each checked unique in the session (`taken`) and
 * in the bulk; throws a ValidationError naming the first one used twice.
 */
export function uniqueUids(
  descs: readonly { uid?: string }[],
  taken: (uid: string) => boolean,
): Set<string> {
  const seen = new Set<string>();
  descs.forEach((d, i) => {
    if (d.uid === undefined) return;
    if (taken(d.uid) || seen.has(d.uid)) {
      throw new ValidationError(`invalid TaskDescription: /${i}/uid '${d.uid}' is already used`, [
        {
          path: `/${i}/uid`,
          message: `must be unique in the session ('${d.uid}' is already used)`,
        },
      ]);
    }
    seen.add(d.uid);
  });
  return seen;
}
