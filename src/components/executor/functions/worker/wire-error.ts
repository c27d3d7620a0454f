/**
 * What a function threw, as the protocol carries it (protocol.ts, WireError): anything may be
 * thrown, not only Errors. Texts longer than MAX_ERROR_TEXT are cut.
 */
import { MAX_ERROR_TEXT, type WireError } from './protocol';

/** A stack without the frames of `ownFile` under the function's (how it was called). */
function ownFrames(stack: string, ownFile: string): string {
  const lines = stack.split('\n');
  const mine = lines.findIndex((l) => l.includes(ownFile));
  return mine < 0 ? stack : lines.slice(0, mine).join('\n');
}

function cut(text: string): string {
  return text.length <= MAX_ERROR_TEXT ? text : `${text.slice(0, MAX_ERROR_TEXT)}... (cut)`;
}

/** `e` as a WireError; `ownFile`: the worker's file that called the function. */
export function toWireError(e: unknown, ownFile: string): WireError {
  if (e !== null && typeof e === 'object' && typeof (e as Error).message === 'string') {
    const err = e as Error & { code?: unknown };
    const out: WireError = { name: cut(String(err.name ?? 'Error')), message: cut(err.message) };
    if (typeof err.stack === 'string') out.stack = cut(ownFrames(err.stack, ownFile));
    if (typeof err.code === 'string' || typeof err.code === 'number') out.code = String(err.code);
    return out;
  }
  let text: string;
  try {
    text = typeof e === 'string' ? e : (JSON.stringify(e) ?? String(e));
  } catch {
    text = String(e);
  }
  return { name: 'Error', message: cut(`a non-error value was thrown: ${text}`) };
}
