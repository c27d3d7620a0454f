/* Generated from schemas/store-reply.schema.json by scripts/gen-types.js: do not edit. */

export interface StoreReply {
  batch: string;
  ok: boolean;
  accepted?: number;
  error?: {
    code: string;
    message: string;
    issues?: {
      path: string;
      message: string;
    }[];
  };
}
