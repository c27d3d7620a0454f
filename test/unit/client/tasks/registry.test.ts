import { describe, expect, it } from '@jest/globals';
import { Task } from '../../../../src/client/task';
import { TaskRegistry } from '../../../../src/client/tasks/registry';

describe('TaskRegistry', () => {
  it('numbers tasks in the order they are taken on, across calls', () => {
    const r = new TaskRegistry();
    const a = [new Task('a', { executable: 'x' }), new Task('b', { executable: 'x' })];
    const b = [new Task('c', { executable: 'x' })];
    r.add(a);
    r.add(b);
    expect([...a, ...b].map((t) => t.seq)).toEqual([0, 1, 2]);
  });

  it('never generates a uid a task already has (a user uid, or one a resumed session took back)', () => {
    const r = new TaskRegistry();
    r.add([
      new Task('task.000000', { executable: 'x' }),
      new Task('task.000002', { executable: 'x' }),
    ]);
    const bulk = new Set(['task.000001']);
    expect(r.nextUid((u) => bulk.has(u))).toBe('task.000003');
    expect(r.nextUid()).toBe('task.000004');
  });

  it('knows where a task ran as soon as its record comes back (task:// staging of dependents)', () => {
    const r = new TaskRegistry();
    const a = new Task('a', { executable: 'x' });
    const b = new Task('b', { executable: 'x' });
    r.add([a, b]);
    r.ranIn('a', '/p/sandbox/a');
    r.ranIn('b', '/p/sandbox/b');
    r.ranIn('unknown', '/p/sandbox/unknown');
    expect([a.sandbox, b.sandbox]).toEqual(['/p/sandbox/a', '/p/sandbox/b']);
  });
});
