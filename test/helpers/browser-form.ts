// A tiny "browser" for end-to-end tests of the server-rendered pages (sign-in, account, OAuth consent):
// a cookie jar over fetch that never follows redirects, and a small HTML reader for forms.
//
//   const browser = new Browser(service.url);
//   const page = await browser.get('/sign-in?next=%2Faccount');
//   const form = findForm(page.text, '/sign-in')!;            // or: hiddenFields(page.text), formAction(page.text)
//   const done = await browser.postForm(form.action, { ...form.fields, email, password });
//   done.status === 303; done.location === '/account'; browser.cookie('mf_session') !== undefined
//
// `postForm` sends `application/x-www-form-urlencoded` with an `Origin` header (the service's own origin
// unless told otherwise; `origin: null` sends none). Cookies are kept per Browser for the base URL's origin
// only (a redirect to an OAuth client's redirect_uri on another port gets none), honour `Max-Age=0`/past
// `Expires` (deletion) and ignore Path/Domain (every test cookie is `Path=/`).

/** One answer, body read. `location` is the raw `Location` header; `redirect` it resolved against the URL. */
export interface Page {
  status: number;
  headers: Headers;
  /** The URL that was requested. */
  url: string;
  text: string;
  location: string | null;
  redirect: URL | null;
  /** Every `Set-Cookie` header of this answer, raw. */
  setCookies: string[];
}

/** A parsed `Set-Cookie` header; attribute names lower-cased, flag attributes (`HttpOnly`) are `true`. */
export interface SetCookie {
  name: string;
  value: string;
  attributes: Record<string, string | true>;
}

/** Options of a request: extra headers, and the `Origin` header (`undefined`: the default of the method). */
export interface RequestOptions {
  headers?: Record<string, string>;
  /** `null` sends no Origin header; a string sends that one. */
  origin?: string | null;
}

export type FormFields = Record<string, string | string[]>;

/** A cookie jar over fetch (`redirect: 'manual'`) bound to one service. */
export class Browser {
  readonly baseUrl: string;
  readonly origin: string;
  /** Headers sent with every request (e.g. `{ 'x-forwarded-for': '203.0.113.7' }`). */
  readonly defaultHeaders: Record<string, string>;
  private readonly jar = new Map<string, string>();

  constructor(baseUrl: string, options: { headers?: Record<string, string> } = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.origin = new URL(this.baseUrl).origin;
    this.defaultHeaders = { ...options.headers };
  }

  /** The value of a cookie in the jar, or undefined. */
  cookie(name: string): string | undefined {
    return this.jar.get(name);
  }

  /** Sets (or with `undefined` removes) a cookie by hand, e.g. to replay an old session cookie. */
  setCookie(name: string, value: string | undefined): void {
    if (value === undefined) this.jar.delete(name);
    else this.jar.set(name, value);
  }

  /** The `Cookie` header this browser would send to its own origin ('' when the jar is empty). */
  cookieHeader(): string {
    return [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  /** GET a path (resolved against the base URL) or an absolute URL. Sends no Origin header by default. */
  get(pathOrUrl: string, options: RequestOptions = {}): Promise<Page> {
    return this.request('GET', pathOrUrl, { ...options, origin: options.origin ?? null });
  }

  /**
   * POSTs fields as `application/x-www-form-urlencoded` (an array value repeats the name, in order), with
   * `Origin: <this.origin>` unless `options.origin` says otherwise.
   */
  postForm(pathOrUrl: string, fields: FormFields, options: RequestOptions = {}): Promise<Page> {
    return this.request('POST', pathOrUrl, {
      ...options,
      body: encodeForm(fields),
      contentType: 'application/x-www-form-urlencoded',
    });
  }

  /** Follows a redirect answer with a GET (throws when `page` is not a redirect). */
  follow(page: Page, options: RequestOptions = {}): Promise<Page> {
    if (!page.redirect) throw new Error(`not a redirect: ${page.status} ${page.url}`);
    return this.get(page.redirect.href, options);
  }

  /**
   * Any request, with the jar's cookies (own origin only) and the default headers. A POST sends
   * `Origin: <this.origin>` unless `options.origin` is given (`null`: none).
   */
  async request(
    method: string,
    pathOrUrl: string,
    options: RequestOptions & { body?: string | Buffer; contentType?: string } = {},
  ): Promise<Page> {
    const url = new URL(pathOrUrl, `${this.baseUrl}/`);
    const headers: Record<string, string> = { ...this.defaultHeaders };
    const ownOrigin = url.origin === this.origin;
    if (ownOrigin && this.jar.size > 0) headers.cookie = this.cookieHeader();
    const origin = options.origin === undefined ? (method === 'GET' ? null : this.origin) : options.origin;
    if (origin !== null) headers.origin = origin;
    if (options.contentType) headers['content-type'] = options.contentType;
    Object.assign(headers, options.headers);
    const response = await fetch(url, {
      method,
      headers,
      redirect: 'manual',
      ...(options.body !== undefined ? { body: options.body } : {}),
    });
    const text = await response.text();
    const setCookies = response.headers.getSetCookie();
    if (ownOrigin) for (const raw of setCookies) this.store(parseSetCookie(raw));
    const location = response.headers.get('location');
    return {
      status: response.status,
      headers: response.headers,
      url: url.href,
      text,
      location,
      redirect: location === null ? null : new URL(location, url),
      setCookies,
    };
  }

  private store(cookie: SetCookie): void {
    const maxAge = cookie.attributes['max-age'];
    const expires = cookie.attributes.expires;
    const expired =
      (typeof maxAge === 'string' && Number(maxAge) <= 0) ||
      (typeof expires === 'string' && Date.parse(expires) <= Date.now());
    if (expired || cookie.value === '') this.jar.delete(cookie.name);
    else this.jar.set(cookie.name, cookie.value);
  }
}

/** `a=1&b=2&b=3` from `{ a: '1', b: ['2', '3'] }`. */
export function encodeForm(fields: FormFields): string {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields))
    for (const one of Array.isArray(value) ? value : [value]) body.append(name, one);
  return body.toString();
}

/** Parses one `Set-Cookie` header value. */
export function parseSetCookie(raw: string): SetCookie {
  const [pair = '', ...rest] = raw.split(';');
  const eq = pair.indexOf('=');
  const attributes: Record<string, string | true> = {};
  for (const part of rest) {
    const trimmed = part.trim();
    if (!trimmed) continue;
    const at = trimmed.indexOf('=');
    if (at < 0) attributes[trimmed.toLowerCase()] = true;
    else attributes[trimmed.slice(0, at).trim().toLowerCase()] = trimmed.slice(at + 1).trim();
  }
  return {
    name: (eq < 0 ? pair : pair.slice(0, eq)).trim(),
    value: eq < 0 ? '' : pair.slice(eq + 1).trim(),
    attributes,
  };
}

/** The parsed `Set-Cookie` of `name` in an answer, or undefined. */
export function findSetCookie(page: Pick<Page, 'setCookies'>, name: string): SetCookie | undefined {
  return page.setCookies.map(parseSetCookie).find((cookie) => cookie.name === name);
}

// ---------------------------------------------------------------------------------------------------------
// HTML reading: a small tag scanner (quotes respected, comments skipped), enough for the service's own pages.

/** A start or end tag: lower-cased name, attributes (values entity-decoded), offsets in the HTML. */
export interface Tag {
  name: string;
  end: boolean;
  attrs: Record<string, string>;
  start: number;
  /** Offset just after the `>`. */
  stop: number;
}

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
};

/** Decodes `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` `&nbsp;` and numeric references; others stay as they are. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, body: string) => {
    if (body[0] === '#') {
      const code =
        body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return Number.isFinite(code) ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[body.toLowerCase()] ?? whole;
  });
}

/** Every tag of the document, in order. */
export function tags(html: string): Tag[] {
  const found: Tag[] = [];
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt < 0) break;
    if (html.startsWith('<!--', lt)) {
      const close = html.indexOf('-->', lt + 4);
      i = close < 0 ? html.length : close + 3;
      continue;
    }
    const end = html[lt + 1] === '/';
    let j = lt + (end ? 2 : 1);
    const nameStart = j;
    while (j < html.length && /[A-Za-z0-9-]/.test(html[j]!)) j++;
    const name = html.slice(nameStart, j).toLowerCase();
    if (!name) {
      i = lt + 1; // `<!doctype`, a stray `<`
      if (html[lt + 1] === '!') i = Math.max(lt + 1, html.indexOf('>', lt) + 1 || html.length);
      continue;
    }
    const attrs: Record<string, string> = {};
    for (;;) {
      while (j < html.length && /[\s/]/.test(html[j]!)) j++;
      if (j >= html.length || html[j] === '>') break;
      const attrStart = j;
      while (j < html.length && !/[\s=>/]/.test(html[j]!)) j++;
      const attrName = html.slice(attrStart, j).toLowerCase();
      while (j < html.length && /\s/.test(html[j]!)) j++;
      let value = '';
      if (html[j] === '=') {
        j++;
        while (j < html.length && /\s/.test(html[j]!)) j++;
        const quote = html[j];
        if (quote === '"' || quote === "'") {
          const close = html.indexOf(quote, j + 1);
          const stop = close < 0 ? html.length : close;
          value = html.slice(j + 1, stop);
          j = stop + 1;
        } else {
          const valueStart = j;
          while (j < html.length && !/[\s>]/.test(html[j]!)) j++;
          value = html.slice(valueStart, j);
        }
      }
      if (attrName && !(attrName in attrs)) attrs[attrName] = decodeEntities(value);
    }
    const stop = Math.min(j + 1, html.length);
    found.push({ name, end, attrs, start: lt, stop });
    i = stop;
    // Raw-text elements: skip their content.
    if (!end && (name === 'script' || name === 'style')) {
      const close = html.toLowerCase().indexOf(`</${name}`, i);
      i = close < 0 ? html.length : close;
    }
  }
  return found;
}

/** The text of an HTML fragment: tags removed, entities decoded, white space collapsed. */
export function textContent(fragment: string): string {
  const html = fragment.replace(/<!--[\s\S]*?(?:-->|$)/g, '').replace(/<![^>]*>/g, '');
  let text = '';
  let at = 0;
  for (const tag of tags(html)) {
    text += `${html.slice(at, tag.start)} `;
    at = tag.stop;
  }
  text += html.slice(at);
  return decodeEntities(text).replace(/\s+/g, ' ').trim();
}

/** An input, textarea, select or button of a form. */
export interface Control {
  tag: 'input' | 'textarea' | 'select' | 'button';
  /** `type` attribute lower-cased (`text` for an input without one, `submit` for a button without one). */
  type: string;
  name: string;
  value: string;
  id?: string;
  checked: boolean;
  attrs: Record<string, string>;
  /** Text of a button or textarea. */
  text: string;
}

/** One `<form>`: its action (raw attribute, '' when absent), method (lower-cased, default `get`) and controls. */
export interface Form {
  action: string;
  method: string;
  attrs: Record<string, string>;
  controls: Control[];
  /**
   * What the browser would submit without pressing a button: hidden/text/email/password/... inputs with
   * their value, checked checkboxes and radios (repeated names become arrays), textareas, selects' selected
   * (else first) option. Buttons are not included: add the pressed one (`submitter(form, 'Allow')`).
   */
  fields: FormFields;
  /** The form's inner HTML. */
  html: string;
}

/** Every form of the document, in order. */
export function forms(html: string): Form[] {
  const all = tags(html);
  const result: Form[] = [];
  for (let k = 0; k < all.length; k++) {
    const open = all[k]!;
    if (open.name !== 'form' || open.end) continue;
    let m = k + 1;
    while (m < all.length && !(all[m]!.name === 'form' && all[m]!.end)) m++;
    const close = all[m];
    const inner = all.slice(k + 1, m);
    const controls: Control[] = [];
    for (let n = 0; n < inner.length; n++) {
      const tag = inner[n]!;
      if (tag.end) continue;
      if (tag.name === 'input') {
        const type = (tag.attrs.type ?? 'text').toLowerCase();
        controls.push(
          control(
            'input',
            type,
            tag,
            tag.attrs.value ?? (type === 'checkbox' || type === 'radio' ? 'on' : ''),
            '',
          ),
        );
      } else if (tag.name === 'textarea' || tag.name === 'button') {
        const closing = inner.slice(n + 1).find((t) => t.end && t.name === tag.name);
        const text = decodeEntities(html.slice(tag.stop, closing?.start ?? tag.stop));
        if (tag.name === 'textarea') controls.push(control('textarea', 'textarea', tag, text, text));
        else
          controls.push(
            control(
              'button',
              (tag.attrs.type ?? 'submit').toLowerCase(),
              tag,
              tag.attrs.value ?? '',
              text
                .replace(/<[^>]*>/g, '')
                .replace(/\s+/g, ' ')
                .trim(),
            ),
          );
      } else if (tag.name === 'select') {
        const options = [];
        for (let o = n + 1; o < inner.length && !(inner[o]!.end && inner[o]!.name === 'select'); o++)
          if (inner[o]!.name === 'option' && !inner[o]!.end) options.push(inner[o]!);
        const chosen = options.find((o) => 'selected' in o.attrs) ?? options[0];
        controls.push(control('select', 'select', tag, chosen?.attrs.value ?? '', ''));
      }
    }
    const fields: FormFields = {};
    for (const c of controls) {
      if (!c.name || c.tag === 'button' || 'disabled' in c.attrs) continue;
      if (c.tag === 'input' && ['submit', 'button', 'reset', 'image', 'file'].includes(c.type)) continue;
      if ((c.type === 'checkbox' || c.type === 'radio') && !c.checked) continue;
      const previous = fields[c.name];
      if (previous === undefined) fields[c.name] = c.value;
      else fields[c.name] = [...(Array.isArray(previous) ? previous : [previous]), c.value];
    }
    result.push({
      action: open.attrs.action ?? '',
      method: (open.attrs.method ?? 'get').toLowerCase(),
      attrs: open.attrs,
      controls,
      fields,
      html: html.slice(open.stop, close?.start ?? html.length),
    });
    k = m;
  }
  return result;
}

function control(tagName: Control['tag'], type: string, tag: Tag, value: string, text: string): Control {
  return {
    tag: tagName,
    type,
    name: tag.attrs.name ?? '',
    value,
    ...(tag.attrs.id !== undefined ? { id: tag.attrs.id } : {}),
    checked: 'checked' in tag.attrs,
    attrs: tag.attrs,
    text,
  };
}

/** The first form whose action is `action` (exactly, or its path when the action is absolute). */
export function findForm(html: string, action: string): Form | undefined {
  return forms(html).find((form) => form.action === action || pathOf(form.action) === action);
}

function pathOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  } catch {
    return undefined;
  }
}

/** The action of the first form of the document (undefined without a form). */
export function formAction(html: string): string | undefined {
  return forms(html)[0]?.action;
}

/** Hidden inputs of the whole document (or of one form's HTML) as name → value; the last one of a name wins. */
export function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const tag of tags(html))
    if (!tag.end && tag.name === 'input' && tag.attrs.type?.toLowerCase() === 'hidden' && tag.attrs.name)
      fields[tag.attrs.name] = tag.attrs.value ?? '';
  return fields;
}

/** The `{ name: value }` of the form's button whose text (or value) is `label`, to submit it; throws if none. */
export function submitter(form: Form, label: string): FormFields {
  const button = form.controls.find(
    (c) =>
      (c.tag === 'button' && (c.text === label || c.value === label)) ||
      (c.tag === 'input' && c.type === 'submit' && c.value === label),
  );
  if (!button) throw new Error(`no button "${label}" in the form to ${form.action}`);
  return button.name ? { [button.name]: button.value } : {};
}

/** `<label for=…>` texts of the document: id → label text. */
export function labels(html: string): Record<string, string> {
  const all = tags(html);
  const result: Record<string, string> = {};
  for (let k = 0; k < all.length; k++) {
    const tag = all[k]!;
    if (tag.name !== 'label' || tag.end || tag.attrs.for === undefined) continue;
    const close = all.slice(k + 1).find((t) => t.end && t.name === 'label');
    result[tag.attrs.for] = textContent(html.slice(tag.stop, close?.start ?? tag.stop));
  }
  return result;
}
