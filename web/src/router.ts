import { useEffect, useState } from 'preact/hooks';

// Client-side routing over the History API: the service answers index.html for every dashboard path.

const listeners = new Set<() => void>();

function notify(): void {
  for (const listener of listeners) listener();
}

addEventListener('popstate', notify);

/** Goes to a dashboard path without reloading the page. */
export function navigate(path: string, replace = false): void {
  if (path === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  notify();
  scrollTo(0, 0);
}

/** The current path and query (`/webhooks?key=…`), re-rendering the caller when either changes. */
export function usePath(): string {
  const [path, setPath] = useState(location.pathname + location.search);
  useEffect(() => {
    const update = (): void => setPath(location.pathname + location.search);
    listeners.add(update);
    return () => {
      listeners.delete(update);
    };
  }, []);
  return path;
}

/** Handles a click on an in-app link: plain left clicks navigate in place, others behave as links do. */
export function onLinkClick(event: MouseEvent): void {
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = event.currentTarget as HTMLAnchorElement;
  if (anchor.target || anchor.origin !== location.origin) return;
  event.preventDefault();
  navigate(anchor.pathname + anchor.search);
}
