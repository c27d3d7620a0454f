// The dashboard's entry: the token (from the address once, or typed in), who it is, then one
// view at a time by the address's hash: #/overview, #/tasks?..., #/task/<uid>, #/services,
// #/timeline. A view's polls and streams stop when another is shown.
import type { Whoami } from '../../../src/generated';
import { ApiError, forgetToken, getJson, setToken, takeToken } from './api';
import { h } from './dom';
import { overviewView } from './views/overview';
import { servicesView } from './views/services';
import { taskView } from './views/task';
import { tasksView } from './views/tasks';
import { timelineView } from './views/timeline';
import type { View } from './views/view';

const main = document.getElementById('view')!;
const who = document.getElementById('who')!;
let current: View | undefined;
let me: Whoami | undefined;

function show(view: View): void {
  current?.close();
  current = view;
  main.replaceChildren(view.element);
}

function route(): void {
  if (me === undefined) return;
  const [path, query] = location.hash.replace(/^#/, '').split('?', 2) as [
    string,
    string | undefined,
  ];
  const params = new URLSearchParams(query ?? '');
  for (const a of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    const here =
      path.startsWith(a.dataset.view!) ||
      (a.dataset.view === '/tasks' && path.startsWith('/task/'));
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (path.startsWith('/task/')) {
    show(taskView(decodeURIComponent(path.slice('/task/'.length)), me));
  } else if (path === '/tasks') show(tasksView(params));
  else if (path === '/services') show(servicesView());
  else if (path === '/timeline') show(timelineView());
  else show(overviewView());
  main.focus({ preventScroll: true });
}

/** Asks for a token: the service's owner has one in DIR/admin.token, or makes one for others. */
function login(why: string): void {
  current?.close();
  current = undefined;
  const input = h('input', {
    id: 'token',
    type: 'password',
    autocomplete: 'off',
    required: true,
    placeholder: 'pft_…',
  });
  const form = h(
    'form',
    { class: 'login', 'aria-label': 'sign in' },
    h('p', {}, why),
    h('label', { for: 'token' }, 'token', input),
    h('button', { type: 'submit' }, 'open'),
    h(
      'p',
      { class: 'muted' },
      'The service made an admin token in DIR/admin.token; `pilotfish serve --dir DIR token add --scope read` makes one that can only look.',
    ),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    void start();
  });
  main.replaceChildren(form);
  input.focus();
}

async function start(): Promise<void> {
  if (takeToken() === undefined) return login('This dashboard needs a token of the service.');
  try {
    me = await getJson<Whoami>('/v1/whoami');
  } catch (e) {
    forgetToken();
    const why =
      e instanceof ApiError && e.status === 401
        ? 'That token is not valid here.'
        : `The service did not answer: ${String(e)}`;
    return login(why);
  }
  document.title = `pilotfish: ${me.session}`;
  const signOut = h('button', { type: 'button', class: 'link' }, 'sign out');
  signOut.addEventListener('click', () => {
    forgetToken();
    me = undefined;
    who.replaceChildren();
    login('Signed out.');
  });
  who.replaceChildren(
    h(
      'span',
      { 'data-scopes': me.scopes.join(' ') },
      `${me.session} · token ${me.label ?? me.id} (${me.scopes.join(', ')})`,
    ),
    ' ',
    signOut,
  );
  if (!/^#\//.test(location.hash)) history.replaceState(null, '', '#/overview');
  route();
}

window.addEventListener('hashchange', route);
void start();
