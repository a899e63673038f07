import { useEffect, useRef, useState } from 'preact/hooks';
import { signOut } from './api.ts';
import type { Session } from './api-types.ts';
import { usePath } from './router.ts';
import { Link, SlowDownNotice, useTitle } from './ui.tsx';
import { KeysPage } from './pages/keys.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';
import { CreditsPage } from './pages/credits.tsx';
import { JobsPage } from './pages/jobs.tsx';
import { MediaPage } from './pages/media.tsx';
import { ProjectsPage } from './pages/projects.tsx';
import { ProjectPage } from './pages/project.tsx';

const NAV = [
  { href: '/keys', label: 'API keys' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/credits', label: 'Credits' },
  { href: '/jobs', label: 'Jobs' },
  { href: '/gallery', label: 'Media' },
  { href: '/editor', label: 'Editor' },
] as const;

/** The application's pages (the service answers its page at exactly these paths, docs/dashboard.md). */
const PAGES = new Set(['/keys', '/webhooks', '/credits', '/jobs', '/gallery', '/editor']);
const PROJECT_PATH = /^\/editor\/([^/]+)$/;

/** The page a path shows: one of PAGES, or null when the path is none of the application's. */
function section(path: string): string | null {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path;
  if (trimmed === '/' || trimmed === '') return '/keys';
  if (PAGES.has(trimmed)) return trimmed;
  return PROJECT_PATH.test(trimmed) ? '/editor' : null;
}

/** A path that is none of the application's: says so, with the way back. */
function NotFoundPage() {
  useTitle('Page not found');
  return (
    <section>
      <h1>Page not found</h1>
      <p>There is no page at this address: the link may be mistyped, or the page may have moved.</p>
      <p>Go back to one of your pages:</p>
      <ul>
        {NAV.map((item) => (
          <li key={item.href}>
            <Link href={item.href}>{item.label}</Link>
          </li>
        ))}
      </ul>
    </section>
  );
}

function Page(props: { path: string }) {
  const path = props.path.length > 1 ? props.path.replace(/\/+$/, '') : props.path;
  const editor = PROJECT_PATH.exec(path);
  if (editor?.[1]) return <ProjectPage key={editor[1]} projectId={decodeURIComponent(editor[1])} />;
  switch (section(path)) {
    case '/keys':
      return <KeysPage />;
    case '/webhooks':
      return <WebhooksPage />;
    case '/credits':
      return <CreditsPage />;
    case '/jobs':
      return <JobsPage />;
    case '/gallery':
      return <MediaPage />;
    case '/editor':
      return <ProjectsPage />;
    default:
      return <NotFoundPage />;
  }
}

/** The signed-in application: header, navigation, the current page. */
export function App(props: { session: Session }) {
  const path = usePath().split('?')[0] ?? '/';
  const current = section(path);
  const [signingOut, setSigningOut] = useState(false);
  // After an in-app navigation, move focus to the new page (as a full page load would) for keyboards and readers.
  const firstPath = useRef(path);
  useEffect(() => {
    if (path === firstPath.current) return;
    firstPath.current = '';
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [path]);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <div class="brand">
          <span class="logo">MediaForge</span>
          <span class="who" title={props.session.user.email}>
            {props.session.user.email}
          </span>
        </div>
        <nav aria-label="Main">
          <ul>
            {NAV.map((item) => (
              <li key={item.href}>
                <Link href={item.href} current={current === item.href}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <button
          type="button"
          class="secondary"
          disabled={signingOut}
          onClick={() => {
            setSigningOut(true);
            void signOut();
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <SlowDownNotice />
        <Page path={path} />
      </main>
    </>
  );
}
