/**
 * A module of functions for the type tests of function handles (test/unit/types/): its type,
 * `typeof import('./scoring-module')`, is what a user's handle is typed by. Never loaded by a
 * worker (test/integration/client/function-handles.test.ts writes its JavaScript twin).
 */
export interface Pose {
  x: number;
  y: number;
}

/** An async function of one argument: a call resolves with the awaited value. */
export async function score(pose: Pose): Promise<{ energy: number }> {
  return Promise.resolve({ energy: pose.x * pose.y });
}

/** Two parameters, the second optional. */
export function label(n: number, unit?: string): string {
  return `${n}${unit ?? ''}`;
}

/** Not a function: a handle cannot name it. */
export const VERSION = '1.0';
