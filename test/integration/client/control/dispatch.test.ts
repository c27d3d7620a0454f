import { describe, expect, it } from '@jest/globals';
import { dispatchControl } from '../../../../src/client/control/dispatch';
import { controlContextOf } from '../../../../src/client/session';
import { parseControlReply } from '../../../../src/lib/validate';
import { fixtures } from '../../../support/session-fixture';

/**
 * What a server on another transport (an HTTP API) does: it takes the session's control context
 * and calls the handler table through dispatchControl, as the Unix socket does.
 */
describe("a live session's control handlers, without its socket", () => {
  const fixture = fixtures();

  it('answer status, explain and cancel as the socket does, and say when the session closes', async () => {
    const fx = await fixture.open({ cores: 1 });
    const [t] = await fx.tmgr.submitTasks([{ executable: '/bin/sleep', arguments: ['30'] }]);
    const ctx = controlContextOf(fx.session);

    const status = await dispatchControl(ctx, { op: 'status', id: 1 });
    expect(parseControlReply('status', status)).toMatchObject({
      id: 1,
      ok: true,
      result: { session: fx.session.uid, dir: fx.session.dir, state: 'live', total: 1 },
    });
    const explain = await dispatchControl(ctx, { op: 'explain', uid: t!.uid });
    expect(parseControlReply('explain', explain)).toMatchObject({
      ok: true,
      result: { uid: t!.uid },
    });
    const cancel = await dispatchControl(ctx, { op: 'cancel', uids: [t!.uid, 'nope'] });
    expect(parseControlReply('cancel', cancel)).toEqual({
      ok: true,
      result: { canceled: [t!.uid], unknown: ['nope'], final: [] },
    });
    await fx.tmgr.waitTasks({ timeoutMs: 30_000 });
    expect(t!.state).toBe('CANCELED');

    const closed = fx.session.close();
    expect(await dispatchControl(ctx, { op: 'status' })).toMatchObject({
      ok: true,
      result: { state: 'closing' },
    });
    expect(await dispatchControl(ctx, { op: 'cancel', uids: [t!.uid] })).toMatchObject({
      ok: false,
      error: { code: 'E_CLOSING' },
    });
    await closed;
  }, 60_000);
});
