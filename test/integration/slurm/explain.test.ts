import { expect, it } from '@jest/globals';
import { describeSlurm, slurmEnv } from '../../support/slurm';
import { explained } from '../../support/explained';
import { fixtures } from '../../support/session-fixture';

describeSlurm('why a task waits on a 2-node Slurm pilot', () => {
  const fixture = fixtures();

  it('a colocated task waits on its group’s full node while the other node is free', async () => {
    Object.assign(process.env, slurmEnv());
    const fx = await fixture.open({ resource: 'slurm', nodes: 2, runtimeMin: 5 });
    const long = { executable: '/bin/sleep', arguments: ['300'] };
    const [g1] = await fx.tmgr.submitTasks([{ ...long, coresPerRank: 2, tags: { colocate: 'g' } }]);
    await fx.tmgr.waitTasks({ uids: [g1!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 90_000 });
    const [g2] = await fx.tmgr.submitTasks([{ executable: '/bin/true', tags: { colocate: 'g' } }]);
    const e = await explained(fx, g2!.uid, (x) => x.waiting?.kind === 'tag', 60_000);
    // the group's node is full; the pilot's other node has both its cores free
    const node = e.waiting!.nodes?.[0];
    expect(node).toMatch(/^n[12]$/);
    expect(e.waiting).toMatchObject({
      component: 'AgentScheduler',
      tag: { colocate: 'g' },
      holders: [g1!.uid],
      nodes: [node],
      largestFree: { node, cores: 0 },
    });
    expect(e.waiting!.message).toContain(`it must run on node ${node!} (beside ${g1!.uid})`);
    await fx.tmgr.cancelTasks([g1!.uid]);
    await fx.tmgr.waitTasks({ uids: [g2!.uid], timeoutMs: 60_000 });
    expect(g2!.state).toBe('DONE');
    expect(fx.tmgr.explain(g2!.uid).waiting).toBeUndefined();
  }, 180_000);
});
