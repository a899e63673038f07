// Small display helpers shared by the pages.

/** A timestamp in the viewer's locale, or a dash. */
export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** A whole number with digit grouping. */
export function formatNumber(n: number): string {
  return n.toLocaleString();
}

/** A signed credit change: +100, -1135. */
export function formatDelta(n: number): string {
  return (n > 0 ? '+' : '') + n.toLocaleString();
}

/** Seconds with at most two decimals, or a dash. */
export function formatSeconds(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  return `${Math.round(n * 100) / 100} s`;
}

/** A header value fetch accepts (ISO-8859-1 only): anything else becomes `_`. */
export function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '_').slice(0, 120);
}
