import { describe, expect, it } from '@jest/globals';
import type { Notification } from '../../../src/states/notification';
import { PILOT_STATES } from '../../../src/states/pilot-model';
import { COMPONENTS, TASK_STATES } from '../../../src/states/task-model';
import { decode, encode } from '../../../src/transport/codec';
import { parseNotificationBulk } from '../../../src/lib/validate';
import {
  COMPONENT_CODES,
  KIND_CODES,
  STATE_CODES,
  decodeNotifications,
  encodeNotifications,
} from '../../../src/updater/notification-codec';

const task = (state: Notification['state'], more: Partial<Notification> = {}): Notification => ({
  kind: 'task',
  uid: 'task.000001',
  attempt: 2,
  state,
  ts: 1_790_000_000_123.5,
  component: COMPONENTS.executor,
  ...more,
});

const valid = (items: unknown): boolean => {
  try {
    parseNotificationBulk(items);
    return true;
  } catch {
    return false;
  }
};

describe('the notification codec of store records', () => {
  it('has a code for every kind, state and component the models have', () => {
    expect(KIND_CODES).toEqual(['task', 'pilot', 'service']);
    for (const s of [...TASK_STATES, ...PILOT_STATES, 'SERVICE_READY']) {
      expect(STATE_CODES).toContain(s);
    }
    for (const c of Object.values(COMPONENTS)) expect(COMPONENT_CODES).toContain(c);
    // append-only: the first codes keep their meaning in files already written
    expect(STATE_CODES.slice(0, 3)).toEqual(['NEW', 'TMGR_SCHEDULING_PENDING', 'TMGR_SCHEDULING']);
    expect(STATE_CODES.at(-1)).toBe('SERVICE_READY');
  });

  it('gives back equal notifications, details and all, for every kind', () => {
    const ns: Notification[] = [
      task('AGENT_STAGING_INPUT_PENDING', { detail: { pilot: 'pilot.0000' } }),
      task('TMGR_STAGING_OUTPUT_PENDING', {
        detail: { exitCode: 0, signal: null, result: { a: [1, 'x', null] } },
      }),
      task('FAILED', {
        detail: { reason: { code: 'E_FUNCTION_THREW', message: 'm', component: 'Executor' } },
      }),
      {
        kind: 'pilot',
        uid: 'pilot.0000',
        attempt: 1,
        state: 'PMGR_ACTIVE',
        ts: 5,
        component: 'PilotLauncher',
      },
      {
        kind: 'service',
        uid: 't',
        attempt: 1,
        state: 'SERVICE_READY',
        ts: 6,
        component: 'Executor',
        detail: { endpoint: 'h:1' },
      },
    ];
    const back = decodeNotifications(encodeNotifications(ns));
    expect(back).toEqual(ns);
    expect(valid(back)).toBe(true);
    // the tuples are smaller than the objects
    expect(encodeNotifications(ns).length).toBeLessThan(encode(ns).length);
  });

  it('writes a string no table has as it is', () => {
    const n = task('DONE', { component: 'SomethingNew' });
    expect(decodeNotifications(encodeNotifications([n]))).toEqual([n]);
    expect((decode(encodeNotifications([n])) as unknown[][])[0]![5]).toBe('SomethingNew');
  });

  it('reads records of the older format (objects), also mixed with tuples', () => {
    const old = task('AGENT_EXECUTING');
    expect(decodeNotifications(encode([old]))).toEqual([old]);
    const mixed = encode([old, (decode(encodeNotifications([task('DONE')])) as unknown[])[0]]);
    expect(decodeNotifications(mixed)).toEqual([old, task('DONE')]);
  });

  it('leaves what is no notification for the validator to reject', () => {
    expect(decodeNotifications(encode({ not: 'an array' }))).toEqual({ not: 'an array' });
    const odd = decodeNotifications(
      encode([
        [0, 'u', 1, 99, 1, 0],
        [0, 'u', 1, 15, 1, 0, {}, 'x'],
      ]),
    );
    expect(valid(odd)).toBe(false);
    expect(() => decodeNotifications(Buffer.from([0x92, 0x01]))).toThrow();
  });
});
