/* Generated from schemas/labels.schema.json by scripts/gen-types.js: do not edit. */

/**
 * Labels, key to value: keys of 1 to 128 characters without '=', values up to 1024 characters, at most 64.
 */
export interface Labels {
  [k: string]: string;
}
