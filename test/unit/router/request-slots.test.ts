import { describe, expect, it } from '@jest/globals';
import { RequestSlots } from '../../../src/router/request-slots';

describe('RequestSlots', () => {
  it('holds each request under an id of its own, reusing slots, never answering a stale id', () => {
    const slots = new RequestSlots<{ id: string; n: number }>();
    const a = slots.add((id) => ({ id, n: 1 }));
    const b = slots.add((id) => ({ id, n: 2 }));
    expect([a.id, b.id, slots.size]).toEqual(['q0.0', 'q1.1', 2]);
    expect(slots.delete(a.id)).toBe(true);
    expect(slots.delete(a.id)).toBe(false);
    const c = slots.add((id) => ({ id, n: 3 }));
    expect(c.id).toBe('q0.2'); // a's slot, a new id
    expect(slots.get(a.id)).toBeUndefined();
    expect(slots.get(c.id)).toBe(c);
    expect(slots.get('nonsense')).toBeUndefined();
    expect(slots.values().map((x) => x.n)).toEqual([3, 2]);
    expect(slots.size).toBe(2);
  });
});
