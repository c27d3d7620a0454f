import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium as playwright } from 'playwright-core';
import { chromiumOrWhy } from '../../../bench/chromium';
import type { PilotLiveness, SessionStatus } from '../../../src/generated';
import { compileSchema } from '../../../src/lib/runtime-ajv';
import { runCli } from '../../support/cli';
import { agentTrace } from '../../support/client-child';
import { api, startServe, stopServe, type LiveService } from '../../support/serve';
import { until as untilInPage } from '../../support/page-wait';
import { until } from '../../support/until';

// `pilotfish serve` (the built CLI in a child process) with a local pilot whose agent is
// stopped (SIGSTOP): GET /v1/status, GET /v1/pilots/:uid and `pilotfish status --server` say
// it is unknown, since it was last heard, until it runs on (SIGCONT).

const isLiveness = (
  (v) =>
  (x: unknown): void => {
    if (!v(x)) throw new Error(`not a PilotLiveness: ${JSON.stringify(v.errors)}`);
  }
)(
  compileSchema({
    $ref: 'https://pilotfish.dev/schemas/control-reply.schema.json#/definitions/PilotLiveness',
  }),
);

const chromium = chromiumOrWhy();
const inBrowser = 'path' in chromium ? it : it.skip;
const browserTitle =
  'the dashboard overview shows UNKNOWN beside its state while it is stopped, and not after' +
  ('why' in chromium ? ` (skipped: ${chromium.why})` : '');

describe('pilotfish serve: a pilot whose agent is silent', () => {
  let dir: string;
  let s: LiveService;
  let auth: { url: string; token: string };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'pf-serve-live-'));
    const pilots = path.join(dir, 'pilots.json');
    writeFileSync(pilots, JSON.stringify([{ resource: 'local', cores: 1, runtimeMin: 5 }]));
    s = await startServe(dir, ['--pilots', pilots]);
    auth = { url: s.url, token: s.token };
  }, 60_000);
  afterAll(() => stopServe(s, dir), 60_000);

  const statusOf = async (uid: string): Promise<PilotLiveness | undefined> => {
    const r = await api(auth, 'GET', '/v1/status?pending=0&running=0');
    return (r.body as unknown as SessionStatus).pilots.find((p) => p.uid === uid)?.liveness;
  };
  /** The served pilot once active, and its agent's pid (from the session's journal). */
  const activePilot = async (): Promise<{ uid: string; pid: number }> => {
    const listed = await until(
      () => api(auth, 'GET', '/v1/pilots'),
      (r) => (r.body.pilots as { state: string }[])[0]?.state === 'PMGR_ACTIVE',
      'the pilot active',
      30_000,
    );
    const uid = (listed.body.pilots as { uid: string }[])[0]!.uid;
    return { uid, pid: agentTrace(path.join(dir, 'sessions', s.session), uid).pid! };
  };
  const viewOf = async (uid: string): Promise<PilotLiveness | undefined> =>
    (await api(auth, 'GET', `/v1/pilots/${uid}`)).body.liveness as PilotLiveness | undefined;

  it('says unknown with since in GET /v1/status and GET /v1/pilots/:uid while stopped, ok once it runs on', async () => {
    const { uid, pid } = await activePilot();
    const ok = { state: 'ok', silentParts: [] };
    expect(await statusOf(uid)).toEqual(ok);
    expect(await viewOf(uid)).toEqual(ok);
    const stopped = Date.now();
    process.kill(pid, 'SIGSTOP');
    try {
      const l = await until(
        () => statusOf(uid),
        (x) => x?.state === 'unknown',
        'GET /v1/status: unknown',
        10_000,
      );
      isLiveness(l);
      expect(l!.since).toBeLessThanOrEqual(stopped);
      expect(l!.since).toBeGreaterThan(stopped - 5_000);
      expect(await viewOf(uid)).toEqual(l);
      const cli = await runCli([
        'status',
        '--json',
        '--server',
        s.url,
        '--token-file',
        path.join(dir, 'admin.token'),
      ]);
      expect(cli.code).toBe(0);
      expect((JSON.parse(cli.stdout) as SessionStatus).pilots[0]!.liveness).toEqual(l);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await until(
      () => statusOf(uid),
      (x) => x?.state === 'ok',
      'GET /v1/status: ok',
      10_000,
    );
    expect(await viewOf(uid)).toEqual(ok);
  }, 60_000);

  inBrowser(
    browserTitle,
    async () => {
      const { uid, pid } = await activePilot();
      const browser = await playwright.launch({
        executablePath: (chromium as { path: string }).path,
      });
      try {
        const page = await browser.newPage();
        await page.goto(`${s.url}/dashboard/#token=${s.token}`);
        await page.evaluate(`location.hash = '#/overview'`);
        const row = `document.querySelector('tr[data-pilot="${uid}"]')`;
        await untilInPage(page, `${row}?.textContent.includes('PMGR_ACTIVE')`);
        expect(await page.evaluate(`${row}.querySelector('.badge')`)).toBeNull();
        process.kill(pid, 'SIGSTOP');
        try {
          await untilInPage(
            page,
            `${row}?.querySelector('.badge.unknown')?.textContent === 'UNKNOWN'`,
          );
          expect(await page.evaluate(`${row}.querySelector('.badge.unknown').title`)).toMatch(
            /^no heartbeat since /,
          );
        } finally {
          process.kill(pid, 'SIGCONT');
        }
        await untilInPage(page, `${row} !== null && ${row}.querySelector('.badge') === null`);
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
