import { randomBytes } from 'node:crypto';

/** Session ids are unique across machines; task and pilot ids are counters within a session. */
export function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '.');
  return `pf.${stamp}.${randomBytes(3).toString('hex')}`;
}

export class Counter {
  private n = 0;
  constructor(private readonly prefix: string) {}
  next(): string {
    return `${this.prefix}.${String(this.n++).padStart(6, '0')}`;
  }
}
