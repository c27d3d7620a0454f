import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { appendFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { chromium as playwright, type Browser, type Page } from 'playwright-core';
import { chromiumOrWhy } from '../../../bench/chromium';
import { dashboardScenario, type DashboardScenario } from '../../../bench/dashboard-scenario';
import { textOf, until } from '../../support/page-wait';

// The dashboard `pilotfish serve` serves, in Debian's Chromium driven by playwright-core (no
// downloaded browser), on a live service whose session holds 100,000 tasks and more.

const chromium = chromiumOrWhy();
if ('why' in chromium && process.env.CI !== undefined) {
  throw new Error(`the browser test must run in CI: ${chromium.why}`); // never skipped there
}
const describeIf = 'path' in chromium ? describe : describe.skip;
const title =
  'the dashboard in Chromium' + ('why' in chromium ? ` (skipped: ${chromium.why})` : '');

/** Where the screenshots go: PILOTFISH_DASHBOARD_PNG_DIR (docs/images has them), else none. */
const shots = process.env.PILOTFISH_DASHBOARD_PNG_DIR;
const PENDING = 100_000;
const FAILED = 60;
const WAIT = { timeout: 15_000 };

describeIf(title, () => {
  let sc: DashboardScenario;
  let browser: Browser;
  let page: Page;
  const url = (): string => sc.svc.url.origin;

  // page code is written as strings: this project's types hold no DOM (it runs in Node)
  const js = <T>(p: Page, expr: string): Promise<T> => p.evaluate<T>(expr);
  const go = (p: Page, hash: string): Promise<unknown> =>
    p.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  const text = textOf;

  /** What the pages threw: none, checked after each test. */
  const errors: string[] = [];
  afterEach(() => expect(errors.splice(0)).toEqual([]));

  /** A page of its own (its own tab storage) signed in with `token`. */
  async function open(token: string, hash: string, width = 1280, height = 760): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width, height } });
    const p = await ctx.newPage();
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(`${url()}/dashboard/#token=${token}`);
    await p.waitForSelector('#who [data-scopes]', WAIT);
    await go(p, hash);
    return p;
  }

  async function shot(p: Page, name: string): Promise<void> {
    if (shots === undefined) return;
    mkdirSync(shots, { recursive: true });
    await p.screenshot({ path: path.join(shots, `dashboard-${name}.png`) });
  }

  beforeAll(async () => {
    sc = await dashboardScenario({ pending: PENDING, failed: FAILED });
    browser = await playwright.launch({ executablePath: (chromium as { path: string }).path });
    page = await open(sc.svc.token, '#/overview');
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await sc?.stop();
  }, 120_000);

  it('serves the page with a policy that lets it reach only its own server', async () => {
    const r = await fetch(`${url()}/dashboard/`);
    expect(r.status).toBe(200);
    const csp = r.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    // every request the page made went to the server it came from
    const origins = await js<string[]>(
      page,
      `performance.getEntriesByType('resource').map((e) => new URL(e.name).origin)`,
    );
    expect(new Set(origins)).toEqual(new Set([url()]));
  });

  it('shows the pilots with their cores in use and the counts as they change', async () => {
    await go(page, '#/overview');
    // gate, victim, follower and web run: 4 of the pilot's 6 cores
    await until(page, `document.querySelector('tr[data-pilot="pilot.0000"] meter')?.value === 4`);
    await until(page, `${text('.chip[data-phase="failed"] .n')} === '${FAILED}'`);
    const pending = `'${PENDING.toLocaleString('en-US')}'`;
    await until(page, `${text('.chip[data-phase="pending"] .n')} === ${pending}`);
    expect(await js(page, text('table.failures a'))).toBe('E_EXIT_CODE');
    // three more tasks run and end: the done count moves from what it was to 3 more
    const done = Number(await js<string>(page, text('.chip[data-phase="done"] .n')));
    const r = await sc.api('POST', '/v1/tasks', {
      tasks: [1, 2, 3].map((i) => ({ uid: `more-${i}`, executable: '/bin/true' })),
    });
    expect(r.status).toBe(201);
    await until(page, `${text('.chip[data-phase="done"] .n')} === '${done + 3}'`);
    expect(await js(page, text('.chip[data-phase="pending"] .n'))).toBe(
      PENDING.toLocaleString('en-US'),
    );
    await shot(page, 'overview');
  });

  it('filters 100,000 tasks to the failed ones; one of them shows its reason and output', async () => {
    await go(page, '#/tasks');
    const all = (sc.total + 3).toLocaleString('en-US');
    await until(page, `${text('.table-summary')} === '${all} tasks'`);
    await page.selectOption('#f-state', 'FAILED');
    await page.click('form.filters button[type="submit"]');
    await until(page, `${text('.table-summary')} === '${FAILED} tasks'`);
    const states = await js<string[]>(
      page,
      `[...document.querySelectorAll('.spacer .row:not([hidden]) .c-state')].map((c) => c.textContent)`,
    );
    expect(states.length).toBeGreaterThan(10);
    expect(new Set(states)).toEqual(new Set(['FAILED']));
    await shot(page, 'tasks');
    await page.click('.spacer .row[data-uid="bad-7"]');
    await page.waitForSelector('.reason strong', WAIT);
    expect(await page.textContent('.reason strong')).toBe('E_EXIT_CODE');
    expect(await page.textContent('.reason')).toContain('exited with code 3');
    await until(page, `${text('#out-stdout')} === 'out-7\\n'`);
    await until(page, `${text('#out-stderr')} === 'err-7\\n'`);
    // its history, in model order, from NEW to FAILED, with the times of its steps
    const history = await js<string[]>(
      page,
      `[...document.querySelectorAll('table.history tbody th')].map((c) => c.textContent)`,
    );
    expect(history[0]).toBe('NEW');
    expect(history.at(-1)).toBe('FAILED');
    await shot(page, 'task');
  });

  it("follows a running task's output as new lines are written", async () => {
    await go(page, '#/task/follower');
    await until(page, `${text('#out-stdout')} === 'first line\\n'`);
    for (const line of ['second line', 'third line']) {
      appendFileSync(sc.followerLog, `${line}\n`);
      await until(page, `${text('#out-stdout')}?.endsWith('${line}\\n') === true`);
    }
    expect(await page.textContent('#out-stdout')).toBe('first line\nsecond line\nthird line\n');
  });

  it('cancels a task from its page; a read token is shown no cancel button', async () => {
    const look = await open(sc.readToken, '#/task/victim');
    await look.waitForSelector('[data-state="AGENT_EXECUTING"]', WAIT);
    expect(await look.locator('#cancel').count()).toBe(0);
    expect(await look.textContent('#who')).toContain('(read)');
    await look.context().close();

    await go(page, '#/task/victim');
    await page.waitForSelector('[data-state="AGENT_EXECUTING"]', WAIT);
    await page.click('#cancel');
    await page.waitForSelector('[data-state="CANCELED"]', WAIT);
    const r = await sc.api('GET', '/v1/tasks/victim');
    expect((r.body as { state: string }).state).toBe('CANCELED');
    expect(await page.locator('#cancel').count()).toBe(0);
  });

  it('repaints a row in sight when its task changes, and moves by keyboard', async () => {
    await go(page, '#/tasks?namePrefix=wait-5000');
    await page.waitForSelector('.spacer .row[data-uid="w-5000"]', WAIT);
    const before = await js<number>(page, 'window.pilotfishDashboard.updatesMs.length');
    expect((await sc.api('POST', '/v1/tasks/w-50001/cancel')).status).toBe(200);
    await until(page, `${text('.row[data-uid="w-50001"] .c-state')} === 'CANCELED'`);
    await until(page, `window.pilotfishDashboard.updatesMs.length > ${before}`);
    // into the table, down twice, Enter: the second task's page
    await page.focus('.scroller');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    expect(await js(page, 'document.activeElement.dataset.uid')).toBe('w-50000');
    await page.keyboard.press('Enter');
    await until(page, `location.hash === '#/task/w-50000'`);
    // it waits for gate: the page says so
    await page.waitForSelector('.explain', WAIT);
    expect(await page.textContent('.explain')).toContain('gate');
  });

  it('reads in a narrow window: no sideways scrolling, the table still shows state', async () => {
    const narrow = await open(sc.svc.token, '#/tasks', 390, 800);
    await narrow.waitForSelector('.spacer .row:not([hidden])', WAIT);
    expect(await js(narrow, 'document.documentElement.scrollWidth <= window.innerWidth')).toBe(
      true,
    );
    const state = narrow.locator('.spacer .row:not([hidden]) .c-state').first();
    expect(await state.isVisible()).toBe(true);
    await shot(narrow, 'narrow');
    await narrow.context().close();
  });

  it('moves between views by keyboard, and labels every control', async () => {
    const p = await open(sc.svc.token, '#/overview');
    await p.waitForSelector('.chip', WAIT);
    // a view, once shown, has the focus (a screen reader reads it); the header's sign-out and
    // the views' links are just before it: back four, Enter on "tasks" opens the tasks view
    expect(await js(p, 'document.activeElement.id')).toBe('view');
    for (let i = 0; i < 4; i++) await p.keyboard.press('Shift+Tab');
    expect(await js(p, 'document.activeElement.textContent')).toBe('tasks');
    await p.keyboard.press('Enter');
    await until(p, `location.hash === '#/tasks'`);
    await p.waitForSelector('.spacer .row:not([hidden])', WAIT);
    // every input and select has a label a screen reader names it by
    const unlabeled = await js<string[]>(
      p,
      `[...document.querySelectorAll('input, select')].filter((e) => e.labels.length === 0).map((e) => e.id || e.outerHTML)`,
    );
    expect(unlabeled).toEqual([]);
    // the table says how many rows it has, though it holds only those in sight (and a header)
    const rows = await js<string>(
      p,
      `document.querySelector('.scroller').getAttribute('aria-rowcount')`,
    );
    expect(Number(rows)).toBe(sc.total + 3 + 1);
    await p.context().close();
  });

  it('reports its own paint and update times (npm run bench -- dashboard measures them)', async () => {
    const p = await open(sc.svc.token, '#/overview');
    await p.goto(`${url()}/dashboard/?fresh#/tasks`);
    await until(p, 'window.pilotfishDashboard.tasksPaintedMs !== undefined');
    const painted = await js<number>(p, 'window.pilotfishDashboard.tasksPaintedMs');
    const updates = await js<number[]>(page, 'window.pilotfishDashboard.updatesMs');
    expect(painted).toBeGreaterThan(0);
    expect(updates.length).toBeGreaterThan(0);
    process.stderr.write(
      `dashboard of ${sc.total} tasks: tasks view painted ${painted.toFixed(0)} ms after navigation; row updates ${updates.map((u) => u.toFixed(0)).join(', ')} ms after their notifications\n`,
    );
    await p.context().close();
  });

  it('shows the services and the timeline of the session, live', async () => {
    await go(page, '#/services');
    // the service task, ready at its endpoint
    await until(page, `/:\\d+$/.test(${text('section.services td:nth-child(6)')} ?? '')`);
    expect(await page.textContent('section.services tbody th')).toBe('web');
    await go(page, '#/timeline');
    const frame = page.frameLocator('iframe.timeline');
    await frame.locator('#pf-svg').waitFor({ timeout: 60_000 });
    expect(await frame.locator('rect.lane').count()).toBe(6); // a lane per core of the pilot
    await shot(page, 'timeline');
  }, 90_000);
});
