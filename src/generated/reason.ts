/* Generated from schemas/reason.schema.json by scripts/gen-types.js: do not edit. */

/**
 * Why a task or pilot failed or was canceled, in words a person can act on.
 */
export interface Reason {
  code: string;
  message: string;
  component: string;
  detail?: {};
}
