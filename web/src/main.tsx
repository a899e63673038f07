import { render } from 'preact';
import { ApiError, describeError, goToSignIn, loadSession } from './api.ts';
import { App } from './app.tsx';
import { SlowDownNotice } from './ui.tsx';
import './styles.css';

// Start: read the session; not signed in → the sign-in page, coming back here afterwards.
async function start(root: HTMLElement): Promise<void> {
  // The session's read may wait out a 429 like any request: the notice says so meanwhile.
  root.textContent = '';
  render(
    <>
      <p class="boot">Loading…</p>
      <SlowDownNotice />
    </>,
    root,
  );
  try {
    const session = await loadSession();
    if (!session) {
      goToSignIn();
      return;
    }
    render(<App session={session} />, root);
  } catch (err) {
    const status = err instanceof ApiError ? ` (${err.status})` : '';
    render(null, root);
    root.textContent = '';
    const p = document.createElement('p');
    p.className = 'error boot';
    p.setAttribute('role', 'alert');
    p.textContent = `The dashboard could not start${status}: ${describeError(err)}`;
    root.append(p);
  }
}

const root = document.getElementById('app');
if (root) void start(root);
