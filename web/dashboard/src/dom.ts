// Small helpers to build the page's elements: text is always set as text, never as markup.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined | ((e: Event) => void)>;

/** An element with attributes (`on...` ones are listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

export function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'number' ? String(c) : c);
  }
}

const SVG = 'http://www.w3.org/2000/svg';

/** An SVG element with attributes. */
export function s(
  tag: string,
  attrs: Record<string, string | number> = {},
  ...children: Child[]
): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

/** A duration in words a person reads at a glance. */
export function duration(ms: number): string {
  const a = Math.abs(ms);
  if (a < 1) return `${ms.toFixed(2)} ms`;
  if (a < 1000) return `${ms.toFixed(0)} ms`;
  if (a < 120_000) return `${(ms / 1000).toFixed(2)} s`;
  if (a < 7_200_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** A local time of day with milliseconds (the day too, where it is not today). */
export function clock(ms: number): string {
  const d = new Date(ms);
  const t =
    d.toLocaleTimeString(undefined, { hour12: false }) +
    `.${String(d.getMilliseconds()).padStart(3, '0')}`;
  return d.toDateString() === new Date().toDateString() ? t : `${d.toLocaleDateString()} ${t}`;
}

export function number(n: number): string {
  return n.toLocaleString('en-US');
}

/** The CSS class of a state's colour. */
export function stateClass(state: string): string {
  return `st st-${state.toLowerCase().replace(/_/g, '-')}`;
}

/** Announces a change to screen readers (the page's live region). */
export function announce(text: string): void {
  const live = document.getElementById('live');
  if (live !== null) live.textContent = text;
}
