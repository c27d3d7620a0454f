import { describe, expect, it } from '@jest/globals';
import { Session } from '../../../../src/client/session';
import { UsageError } from '../../../../src/errors';
import { fixtures } from '../../../support/session-fixture';

/** Two clients of one session would bind the same addresses and write the same store. */
describe('resuming a session whose client still runs', () => {
  const fixture = fixtures();

  it('is refused, naming the live client, and the live session goes on; once it closed, a resume opens', async () => {
    const fx = await fixture.open({ cores: 1 });
    const resume = Session.open({ dir: fx.dir, resume: fx.session.uid });
    await expect(resume).rejects.toThrow(UsageError);
    await expect(resume).rejects.toThrow(/its client still runs \(it answers on .*control\.sock\)/);
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/true' }]);
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(t!.state).toBe('DONE');
    await fx.session.close();
    const again = await Session.open({ dir: fx.dir, resume: fx.session.uid });
    await again.close();
  }, 60_000);
});
