// The session's timeline (the page `pilotfish timeline` writes), fetched with the token and
// shown in a sandboxed frame of its own (no access to this page or its token), drawn again
// every few seconds while "live" is on.
import { getText } from '../api';
import { h } from '../dom';
import { poll, type View } from './view';

const EVERY_MS = 5000;

export function timelineView(): View {
  const stop = new AbortController();
  const live = h('input', { type: 'checkbox', id: 'tl-live', checked: true });
  const note = h('span', { class: 'muted', 'aria-live': 'polite' });
  const frame = h('iframe', {
    class: 'timeline',
    title: "the session's timeline",
    sandbox: 'allow-scripts',
  });
  const element = h(
    'section',
    { class: 'timeline-view' },
    h('h2', {}, 'Timeline'),
    h('p', {}, h('label', { for: 'tl-live' }, live, ' live (drawn again every 5 s)'), ' ', note),
    frame,
  );
  let first = true;
  poll(
    EVERY_MS,
    async (signal) => {
      if (!first && !live.checked) return;
      first = false;
      try {
        frame.srcdoc = await getText('/v1/timeline', signal);
        note.textContent = `drawn at ${new Date().toLocaleTimeString(undefined, { hour12: false })}`;
      } catch (e) {
        note.textContent = `cannot draw the timeline: ${String(e)}`;
        throw e;
      }
    },
    stop.signal,
  );
  return { element, close: () => stop.abort() };
}
