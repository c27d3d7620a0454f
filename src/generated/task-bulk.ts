/* Generated from schemas/task-bulk.schema.json by scripts/gen-types.js: do not edit. */
import type { TaskRecord } from './task-record';

/**
 * The unit every task queue carries: many tasks in one message.
 *
 * @minItems 1
 */
export type TaskBulk = [TaskRecord, ...TaskRecord[]];
