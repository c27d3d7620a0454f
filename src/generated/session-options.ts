/* Generated from schemas/session-options.schema.json by scripts/gen-types.js: do not edit. */

export interface SessionOptionsInput {
  store?: 'embedded';
  dir?: string;
  uid?: string;
  updateWorkers?: number;
  logLevel?: 'error' | 'warn' | 'info' | 'debug';
}
