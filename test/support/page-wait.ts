import type { Page } from 'playwright-core';

/**
 * Waits until `expr` (page code, as a string: this project's types hold no DOM) holds in the
 * page, checked at every frame by the page itself: the dashboard's policy forbids eval, which
 * playwright's waitForFunction of a string needs. Throws after `ms`.
 */
export async function until(p: Page, expr: string, ms = 15_000): Promise<void> {
  const held = await p.evaluate<boolean>(
    `new Promise((ok) => {
      const t0 = performance.now();
      const check = () => {
        let v = false;
        try { v = Boolean(${expr}); } catch {}
        if (v) ok(true);
        else if (performance.now() - t0 > ${ms}) ok(false);
        else requestAnimationFrame(check);
      };
      check();
    })`,
  );
  if (!held) throw new Error(`not so in ${ms} ms: ${expr}`);
}

/** The text of the first element `sel` finds, as page code. */
export const textOf = (sel: string): string =>
  `document.querySelector(${JSON.stringify(sel)})?.textContent`;
