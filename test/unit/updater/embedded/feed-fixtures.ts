import type { Notification } from '../../../../src/generated';
import type { RecordSource } from '../../../../src/updater/embedded/feed';

/** A task notification of `uid` (NEW, attempt 1, ts 0). */
export const note = (uid: string): Notification => ({
  kind: 'task',
  uid,
  attempt: 1,
  state: 'NEW',
  ts: 0,
  component: 'test',
});

/** Records "on disk", one payload each: counts the reads of each record. */
export class Source implements RecordSource {
  readonly reads: number[];
  constructor(private readonly records: readonly Buffer[]) {
    this.reads = records.map(() => 0);
  }
  read(record: number): Buffer {
    this.reads[record]!++;
    return this.records[record]!;
  }
}
