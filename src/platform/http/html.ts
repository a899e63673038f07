import { createHash } from 'node:crypto';
import { RawText, type Reply, type RequestContext } from './route.ts';

// The plain server-rendered pages of accounts and OAuth consent (docs/accounts.md, Pages; docs/mcp.md):
// escaped text, one stylesheet whose hash the Content-Security-Policy allows (no inline script anywhere),
// never framed, never cached.

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}
const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Marks HTML built from escaped parts, so `html` templates insert it as it is. */
export class Html {
  constructor(readonly markup: string) {}
}

/** A template tag: every interpolated value is escaped unless it is `Html` (or an array of them). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((value, index) => {
    out += render(value) + strings[index + 1]!;
  });
  return new Html(out);
}
function render(value: unknown): string {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

// The dashboard's look (web/src/styles.css: its palette, header, panels and buttons) in the few rules these
// pages need, so that signing in and the application read as one product.
const STYLE = `:root{--bg:#f6f7f9;--panel:#fff;--text:#1b1f24;--muted:#57606a;--line:#d0d7de;--accent:#0b5cad;
--danger:#b42318;--focus:#ff9f1c;font:16px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif;
color:var(--text);background:var(--bg)}*{box-sizing:border-box}body{margin:0;min-width:320px}
header{padding:.5rem 1rem;background:var(--panel);border-bottom:1px solid var(--line)}
header a{font-weight:700;color:var(--text);text-decoration:none}a{color:var(--accent)}
main{max-width:28rem;margin:2.5rem auto;padding:1.25rem 1.5rem 1.5rem;background:var(--panel);
border:1px solid var(--line);border-radius:8px}h1{font-size:1.4rem;margin:0 0 .75rem}
label,legend{display:block;font-weight:600;font-size:.9rem;margin:.75rem 0 .25rem}
input[type=email],input[type=password]{width:100%;padding:.45rem .55rem;font:inherit;color:var(--text);
border:1px solid var(--line);border-radius:6px}
button{margin:1rem .5rem 0 0;padding:.45rem .9rem;min-height:2.25rem;font:inherit;font-weight:600;cursor:pointer;
color:#fff;background:var(--accent);border:1px solid var(--accent);border-radius:6px}
button.secondary{color:var(--accent);background:var(--panel)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
fieldset{border:1px solid var(--line);border-radius:8px;margin:.5rem 0;padding:.5rem .75rem}
.check{display:flex;gap:.5rem;align-items:center;margin:.25rem 0}.check label{margin:0;font-weight:400}
.error{color:var(--danger);font-weight:600;overflow-wrap:anywhere}.muted{color:var(--muted);font-size:.9rem}
@media (max-width:30rem){main{margin:0;border:0;border-radius:0}}`;
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');
// Built apart from the page's template (which a formatter may re-indent): the hash covers exactly its text.
const STYLE_ELEMENT = new Html(`<style>${STYLE}</style>`);

/**
 * A whole page. `formTargets` are origins a form on it may end up at after a redirect (the consent page's
 * client), which CSP's `form-action` must name as well as our own.
 */
export function page(
  status: number,
  title: string,
  body: Html,
  options: { formTargets?: string[]; headers?: Record<string, string> } = {},
): Reply {
  const formAction = ["'self'", ...(options.formTargets ?? [])].join(' ');
  const document = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · MediaForge</title>
        ${STYLE_ELEMENT}
      </head>
      <body>
        <header><a href="/">MediaForge</a></header>
        <main>${body}</main>
      </body>
    </html>`;
  return {
    status,
    body: new RawText(document.markup),
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
      // Not `no-referrer`: with it, browsers send `Origin: null` on the forms' POSTs, which we must refuse.
      'referrer-policy': 'same-origin',
      'content-security-policy': `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
      ...options.headers,
    },
  };
}

/** A redirect after a form or to a page (303: the browser follows with a GET; 302 for OAuth's redirects). */
export function seeOther(location: string, headers: Record<string, string> = {}, status = 303): Reply {
  return {
    status,
    body: new RawText(''),
    headers: {
      location,
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      ...headers,
    },
  };
}

/** The value of one cookie of the request, or undefined. */
export function cookieOf(ctx: Pick<RequestContext, 'headers'>, name: string): string | undefined {
  for (const part of (ctx.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** Form bodies of these pages are small; anything bigger is not a person filling in a form. */
export const FORM_MAX_BYTES = 16 * 1024;

/**
 * Whether a state-changing request may come from this browser page: an `Origin`, when sent, must be ours
 * (a form posted from another site is refused; CSRF tokens are the second line).
 */
export function fromOwnOrigin(ctx: Pick<RequestContext, 'headers'>, ownOrigin: string): boolean {
  const origin = ctx.headers.origin;
  return origin === undefined || origin === ownOrigin;
}
