import { describe, expect, it } from '@jest/globals';
import { ENOUGH_ITEMS, SendGap } from '../../../src/transport/send-gap';
import { FakeClock } from '../../support/fake-clock';

/** A SendGap whose sends are recorded (each resolves at once). */
function gap(ms: number): { g: SendGap; sent: unknown[][] } {
  const sent: unknown[][] = [];
  const g = new SendGap(ms, (items) => {
    sent.push(items);
    return Promise.resolve();
  });
  return { g, sent };
}

describe('SendGap', () => {
  it('sends a bulk at once after a quiet spell, and gathers what comes within the gap', async () => {
    const { g, sent } = gap(50);
    await g.send([1]);
    expect(sent).toEqual([[1]]);
    const second = g.send([2, 3]);
    const third = g.send([4]);
    expect(sent).toHaveLength(1); // held until the gap has passed
    await Promise.all([second, third]); // both resolve with the one message that carries them
    expect(sent).toEqual([[1], [2, 3, 4]]);
  });

  it('with no gap, sends every bulk as it comes', async () => {
    const { g, sent } = gap(0);
    await g.send([1]);
    await g.send([2]);
    expect(sent).toEqual([[1], [2]]);
  });

  it('flush sends what it holds now (a close), drop lets it go (a discard)', async () => {
    const { g, sent } = gap(60_000);
    await g.send(['a']);
    const held = g.send(['b']);
    await g.flush();
    await held;
    expect(sent).toEqual([['a'], ['b']]);
    const dropped = g.send(['c']);
    g.drop();
    await dropped; // resolves, as a send a closed queue dropped does
    expect(sent).toEqual([['a'], ['b']]);
    await g.flush(); // nothing left
    expect(sent).toHaveLength(2);
  });

  it('reports a failed send by its timer to the bulks it carried, and to nothing else', async () => {
    const g = new SendGap(20, (items) =>
      items.includes('x') ? Promise.reject(new Error('gone')) : Promise.resolve(),
    );
    await g.send(['first']);
    // sent by the timer: an unhandled rejection would end the process (Node's default)
    await expect(g.send(['x'])).rejects.toThrow('gone');
  });

  it('reports a failed send to every bulk it carried', async () => {
    const g = new SendGap(60_000, (items) =>
      items.includes('x') ? Promise.reject(new Error('gone')) : Promise.resolve(),
    );
    await g.send(['first']);
    const a = g.send(['x']);
    const b = g.send(['y']);
    const flushed = g.flush();
    await expect(a).rejects.toThrow('gone');
    await expect(b).rejects.toThrow('gone');
    await expect(flushed).rejects.toThrow('gone');
  });

  describe('while bulks keep gathering', () => {
    /** A SendGap of 2 ms growing to 10 ms on a clock the test moves. */
    function growing(): { g: SendGap; sent: unknown[][]; clock: FakeClock } {
      const clock = new FakeClock();
      const sent: unknown[][] = [];
      const g = new SendGap(
        2,
        (items) => {
          sent.push(items);
          return Promise.resolve();
        },
        { maxGapMs: 10, clock },
      );
      return { g, sent, clock };
    }

    it('doubles its gap with each held message of several items, up to the most', () => {
      const { g, sent, clock } = growing();
      void g.send([0]); // after a quiet spell: at once
      const gaps: number[] = [];
      for (let i = 1; i <= 40; i++) {
        clock.advance(0.5); // a task handed back every half millisecond
        void g.send([i]);
        if (sent.length > gaps.length + 1) gaps.push(g.currentGapMs);
      }
      expect(gaps).toEqual([4, 8, 10]);
      // messages 2 ms, then 4, 8 and 10 ms apart, and nothing lost or reordered
      clock.advance(10);
      expect(sent.flat()).toEqual(Array.from({ length: 41 }, (_, i) => i));
      expect(sent.map((m) => m.length)).toEqual([1, 3, 8, 16, 13]);
    });

    it('shortens its gap again for a stream fast enough to fill messages at the least gap', () => {
      const { g, sent, clock } = growing();
      void g.send([0]);
      void g.send([1, 2]);
      clock.advance(2); // 2 items held: a trickle, the gap grows
      expect(g.currentGapMs).toBe(4);
      void g.send(Array.from({ length: ENOUGH_ITEMS }, (_, i) => 3 + i));
      clock.advance(4); // a message of ENOUGH_ITEMS: no reason to wait longer
      expect(g.currentGapMs).toBe(2);
      expect(sent.map((m) => m.length)).toEqual([1, 2, ENOUGH_ITEMS]);
    });

    it('goes back to the least gap after a quiet spell or a message of one item', () => {
      const { g, sent, clock } = growing();
      void g.send(['a']);
      void g.send(['b']);
      void g.send(['c']);
      clock.advance(2);
      expect(g.currentGapMs).toBe(4);
      clock.advance(4); // quiet for the whole gap: the next goes at once and the gap resets
      void g.send(['d']);
      expect(sent).toEqual([['a'], ['b', 'c'], ['d']]);
      expect(g.currentGapMs).toBe(2);
      // a chain (each task waits for the one before): one item per held message, never longer
      for (const x of ['e', 'f', 'g']) {
        clock.advance(1);
        void g.send([x]);
        clock.advance(1);
        expect(g.currentGapMs).toBe(2);
      }
      expect(sent.slice(3)).toEqual([['e'], ['f'], ['g']]);
    });
  });

  it('holds nothing while the producer has nothing else under way (busy says so)', () => {
    const clock = new FakeClock();
    const sent: unknown[][] = [];
    let others = 0;
    const g = new SendGap(
      2,
      (items) => {
        sent.push(items);
        return Promise.resolve();
      },
      { maxGapMs: 10, clock, busy: () => others > 0 },
    );
    // a chain of round trips: each task handed back 0.5 ms after the one before, none besides
    for (const x of ['a', 'b', 'c']) {
      void g.send([x]);
      clock.advance(0.5);
    }
    expect(sent).toEqual([['a'], ['b'], ['c']]);
    // with others under way the gap holds again
    others = 3;
    void g.send(['d']);
    expect(sent).toHaveLength(3);
    clock.advance(2);
    expect(sent).toEqual([['a'], ['b'], ['c'], ['d']]);
  });
});
