import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError, onSlowDown } from './api.ts';
import { onLinkClick } from './router.ts';

/** An in-app link: a real `<a href>` that navigates without a reload. */
export function Link(props: {
  href: string;
  class?: string;
  children: ComponentChildren;
  current?: boolean;
}) {
  return (
    <a
      href={props.href}
      class={props.class}
      aria-current={props.current ? 'page' : undefined}
      onClick={onLinkClick}
    >
      {props.children}
    </a>
  );
}

/** An error line, announced to screen readers; nothing when there is no error. */
export function ErrorText(props: { error: string | null }) {
  if (!props.error) return null;
  return (
    <p class="error" role="alert">
      {props.error}
    </p>
  );
}

/** A polite status line (saved, copied, reloaded...). */
export function Notice(props: { text: string | null }) {
  return (
    <p class="notice" role="status">
      {props.text ?? ''}
    </p>
  );
}

/** The state of a load: its data, its error, whether it runs, and a reload function. */
export interface Loaded<T> {
  data: T | null;
  error: string | null;
  loading: boolean;
  reload: () => Promise<void>;
}

/** Loads data when the component mounts and whenever `deps` change; errors become text. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  // The caller names the dependencies, as with useCallback.
  const run = useCallback(load, deps);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setLoading(true);
    try {
      const value = await run();
      if (mine === generation.current) {
        setData(value);
        setError(null);
      }
    } catch (err) {
      if (mine === generation.current) setError(describeError(err));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, [run]);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { data, error, loading, reload };
}

/** Sets the document title for a page. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · MediaForge`;
  }, [title]);
}

/** A field's value read from the submitted form itself (never a render behind what the user typed). */
export function formValue(event: Event, name: string): string {
  const form = event.currentTarget as HTMLFormElement;
  const field = form.elements.namedItem(name) as
    HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement | null;
  return field?.value ?? '';
}

/**
 * The "slow down, retrying" notice (docs/dashboard.md "Rate limits"): shown while requests wait out a 429,
 * above whatever page is open (which stays), with the seconds left.
 */
export function SlowDownNotice() {
  const [until, setUntil] = useState<number | null>(null);
  const [now, setNow] = useState(Date.now());
  useEffect(() => onSlowDown(setUntil), []);
  useEffect(() => {
    if (until === null) return;
    setNow(Date.now());
    const tick = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(tick);
  }, [until]);
  const seconds = until === null ? 0 : Math.max(1, Math.ceil((until - now) / 1000));
  return (
    <p class="notice slow-down" role="status">
      {until === null ? '' : `Too many requests at once: slowing down, retrying in ${seconds} s…`}
    </p>
  );
}
