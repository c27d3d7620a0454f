import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium as playwright, type Browser } from 'playwright-core';
import { chromiumOrWhy } from '../../../bench/chromium';
import { startServe, stopServe, type LiveService } from '../../support/serve';
import { textOf, until } from '../../support/page-wait';

// The dashboard's services and models view on `pilotfish serve --router`: a model's replica,
// started by a request, shows with its pilot, endpoint, loads and requests served.

const chromium = chromiumOrWhy();
if ('why' in chromium && process.env.CI !== undefined) {
  throw new Error(`the browser test must run in CI: ${chromium.why}`);
}
const describeIf = 'path' in chromium ? describe : describe.skip;
const SERVER = path.resolve(__dirname, '../../support/model-server.js');
const shots = process.env.PILOTFISH_DASHBOARD_PNG_DIR;

const title =
  'the dashboard: models of the router' + ('why' in chromium ? ` (skipped: ${chromium.why})` : '');

describeIf(title, () => {
  let dir: string;
  let s: LiveService | undefined;
  let browser: Browser;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pf-dash-models-'));
    const model = (name: string) => ({
      name,
      service: {
        executable: process.execPath,
        arguments: [SERVER, '--name', name],
        service: { port: 'auto', ready: { http: '/health' } },
      },
    });
    const config = { models: [model('small-chat'), model('embedder')] };
    fs.writeFileSync(path.join(dir, 'router.json'), JSON.stringify(config));
    s = await startServe(path.join(dir, 'svc'), ['--router', path.join(dir, 'router.json')]);
    browser = await playwright.launch({ executablePath: (chromium as { path: string }).path });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await stopServe(s, dir);
  }, 60_000);

  it('shows each model, and the replica a request started with its endpoint and what it served', async () => {
    const p = await browser.newPage({ viewport: { width: 1280, height: 640 } });
    await p.goto(`${s!.url}/dashboard/#token=${s!.token}`);
    await p.waitForSelector('#who [data-scopes]', { timeout: 15_000 });
    await p.evaluate(`location.hash = '#/services'`);
    await until(p, `document.querySelectorAll('tr[data-model]').length === 2`);
    expect(await p.textContent('tr[data-model="embedder"] td')).toBe('none');
    const res = await fetch(`${s!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s!.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'small-chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    // its replica ready at an endpoint; one load, one request served; the service task listed
    const row = 'tr[data-model="small-chat"]';
    await until(
      p,
      `/ ready on pilot\\.0000\\/.+ at .+:\\d+ /.test(${textOf(`${row} ul.replicas li`)})`,
    );
    await until(p, `${textOf(`${row} td:nth-child(5)`)} === '1'`); // served
    expect(await p.textContent(`${row} td:nth-child(6)`)).toBe('1'); // loads
    const replica = await p.textContent(`${row} ul.replicas a`);
    await until(p, `${textOf('section.services tbody th')} === ${JSON.stringify(replica)}`);
    if (shots !== undefined) {
      await p.screenshot({ path: path.join(shots, 'dashboard-services.png'), fullPage: true });
    }
    await p.close();
  }, 60_000);
});
