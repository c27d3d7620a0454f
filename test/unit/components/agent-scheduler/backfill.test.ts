import { describe, expect, it } from '@jest/globals';
import { Backfill } from '../../../../src/components/agent-scheduler/backfill';
import { ShapeBlocking } from '../../../../src/components/agent-scheduler/blocking';
import type { NodeResources } from '../../../../src/components/agent-scheduler/node-state';
import { Placement } from '../../../../src/components/agent-scheduler/placement';
import { requestOf, type Request } from '../../../../src/components/agent-scheduler/request';
import type { Shape } from '../../../../src/components/agent-scheduler/shapes';
import type { TaskDescription } from '../../../../src/generated';
import { taskRecord } from '../../../support/core-harness';

const NODES: NodeResources[] = [
  { name: 'a', cores: 4, gpus: 0, memMb: 8_192 },
  { name: 'b', cores: 4, gpus: 0, memMb: 8_192 },
];

function req(d: TaskDescription): Request {
  const r = requestOf(d);
  if ('error' in r) throw new Error(r.error);
  return r;
}

/** The parts without the core: its queues, a Placement, ShapeBlocking and Backfill. */
function parts(limit: number) {
  const shapes = new Map<string, Shape>();
  const waitingIn = new Map<string, Shape>();
  const placement = new Placement(NODES, waitingIn);
  const blocking = new ShapeBlocking(placement);
  let drops = 0;
  const backfill = new Backfill(limit, placement, shapes, waitingIn, () => {
    drops++;
    blocking.unblockAll();
  });
  /** A shape of `uids` waiting for `d`, in that order. */
  const wait = (d: TaskDescription, ...uids: string[]): Shape => {
    const r = req(d);
    const queue = uids.map((uid, i) => ({
      task: taskRecord(uid, 'AGENT_SCHEDULING', { description: d }),
      submitted: i,
      arrival: i,
    }));
    const shape: Shape = { req: r, queue, head: 0, blocked: false };
    shapes.set(r.key, shape);
    for (const uid of uids) waitingIn.set(uid, shape);
    blocking.added(shape);
    return shape;
  };
  /** Places a running task of `cores` cores (on the best fit). */
  const run = (uid: string, cores: number) => placement.place(uid, req({ coresPerRank: cores }))!;
  const reserved = (): string[] | undefined => placement.reserved?.map((n) => n.name);
  return { shapes, placement, blocking, backfill, wait, run, reserved, drops: () => drops };
}

describe('Backfill', () => {
  it('lets `limit` later tasks pass a head that does not fit, then reserves the most free node for it', () => {
    const p = parts(2);
    p.run('r0', 4); // a: 0 free
    p.run('r1', 1); // b: 3 free
    const head = p.wait({ coresPerRank: 4 }, 'head');
    const small = p.wait({ coresPerRank: 1, priority: -1 }, 's1', 's2', 's3');
    p.blocking.block(head);
    p.backfill.update();
    expect(p.placement.reservedFor).toBeUndefined();
    p.backfill.started('s1', small);
    expect(p.placement.reservedFor).toBeUndefined();
    p.backfill.started('s2', small);
    expect(p.placement.reservedFor).toBe('head');
    expect(p.reserved()).toEqual(['b']);
    // the reserved node takes no other task: b drains for the head
    expect(p.placement.place('s3', small.req)).toBeUndefined();
    expect(p.placement.place('head', head.req)).toBeUndefined(); // not yet: 3 of 4 cores free
  });

  it('reserves at once with limit 0, and a drop asks for another round only when nodes were held', () => {
    const p = parts(0);
    p.run('r0', 3);
    p.run('r1', 3);
    const head = p.wait({ coresPerRank: 2 }, 'head');
    p.blocking.block(head);
    p.backfill.update();
    expect(p.placement.reservedFor).toBe('head');
    expect(p.reserved()).toEqual(['a']); // both have 1 core free: the first of them
    expect(p.placement.place('other', req({ coresPerRank: 1 }))?.[0]!.node.name).toBe('b');
    p.backfill.drop();
    expect(p.drops()).toBe(1);
    expect(head.blocked).toBe(false); // every blocked shape is tried again
    p.backfill.drop();
    expect(p.drops()).toBe(1);
  });

  it('drops the reservation of a head that leaves or is stranded, and of no other task', () => {
    const p = parts(0);
    p.run('r0', 4);
    p.run('r1', 4);
    const head = p.wait({ coresPerRank: 4 }, 'head', 'next');
    p.blocking.block(head);
    p.backfill.update();
    expect(p.placement.reservedFor).toBe('head');
    p.backfill.left('next', head.queue[1]!);
    p.backfill.stranded('next');
    expect(p.placement.reservedFor).toBe('head');
    p.backfill.left('head', head.queue[0]!);
    expect(p.placement.reservedFor).toBeUndefined();
    expect(p.drops()).toBe(1);
  });
});

describe('ShapeBlocking', () => {
  it('re-tries, when a node gets capacity back, only the blocked shapes that can use it', () => {
    const p = parts(0);
    const [hold] = p.run('r0', 4);
    p.run('r1', 4);
    const two = p.wait({ coresPerRank: 2 }, 'two');
    const big = p.wait({ coresPerRank: 8 }, 'big');
    p.blocking.block(two);
    p.blocking.block(big);
    expect(p.blocking.readyInOrder()).toEqual([]);
    const back = p.placement.giveBack({ req: req({ coresPerRank: 4 }), holds: [hold!] });
    for (const n of back) {
      p.placement.refile(n);
      p.blocking.unblockFor(n);
    }
    expect(p.blocking.readyInOrder()).toEqual([two]);
    expect(big.blocked).toBe(true);
    p.blocking.forget(big);
    p.blocking.unblockAll();
    expect(big.blocked).toBe(true); // forgotten: no longer filed anywhere
  });

  it('files a shape of a bound colocate group under its node, and frees it with the group', () => {
    const p = parts(0);
    p.placement.place('c0', req({ coresPerRank: 3, tags: { colocate: 'g' } }));
    p.run('r1', 4);
    const group = p.wait({ coresPerRank: 2, tags: { colocate: 'g' } }, 'c1');
    const other = p.wait({ coresPerRank: 2, priority: 1 }, 'o1');
    p.blocking.block(group);
    p.blocking.block(other);
    p.blocking.unblockGroup('g');
    expect(p.blocking.readyInOrder()).toEqual([group]);
    expect(other.blocked).toBe(true);
  });
});
