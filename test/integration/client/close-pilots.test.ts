import { describe, expect, it } from '@jest/globals';
import { PilotManager } from '../../../src/client/pilot-manager';
import { Session } from '../../../src/client/session';
import { TaskManager } from '../../../src/client/task-manager';
import { tempDirs } from '../../support/temp-dirs';

describe("a pilot ended by its session's close", () => {
  const temp = tempDirs('pf-close-pilots-');

  it('ends DONE saying so (served to the end); its tasks still running end CANCELED', async () => {
    const session = await Session.open({ dir: temp.make() });
    const pmgr = new PilotManager(session);
    const [pilot] = await pmgr.submitPilots([{ resource: 'local', cores: 2, runtimeMin: 5 }]);
    const tmgr = new TaskManager(session);
    tmgr.addPilots([pilot!]);
    const seen: string[] = [];
    pmgr.onState((p, state, info) => seen.push(`${state} ${info.reason?.code ?? ''}`.trim()));
    const [done, long] = await tmgr.submitTasks([
      { executable: '/bin/true' },
      { executable: '/bin/sleep', arguments: ['60'] },
    ]);
    await tmgr.waitTasks({ uids: [done!.uid], timeoutMs: 20_000 });
    await tmgr.waitTasks({ uids: [long!.uid], states: ['AGENT_EXECUTING'], timeoutMs: 20_000 });
    await session.close();
    expect(pilot!.state).toBe('DONE');
    expect(pilot!.reason).toMatchObject({
      code: 'I_PILOT_DONE',
      message: "ended by its session's close",
    });
    expect(seen.at(-1)).toBe('DONE I_PILOT_DONE');
    expect([done!.state, long!.state]).toEqual(['DONE', 'CANCELED']);
    expect(long!.reason?.message).toContain('its session closed');
  }, 40_000);
});
