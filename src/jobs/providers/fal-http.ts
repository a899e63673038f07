// One HTTP call to fal's queue, and the readable text of fal's error answers. Every failure here is a plain
// `Error` whose message never carries the key: the key only ever travels in the `Authorization` header, and
// anything fal echoes back is scrubbed before it becomes a message.

/** How the fal adapter talks HTTP. */
export interface FalHttp {
  key: string;
  timeoutMs: number;
  fetch: typeof fetch;
}

/** A fal answer, whatever its status: the parsed JSON body (undefined when it was not JSON) and the raw text. */
export interface FalAnswer {
  status: number;
  body: unknown;
  text: string;
}

// fal's queue answers are small JSON documents; anything bigger is not fal talking.
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
const MAX_MESSAGE_CHARS = 500;

/** Sends one request to fal with the key and the per-call time-out; rejects only when no answer came. */
export async function falCall(
  http: FalHttp,
  method: 'GET' | 'POST' | 'PUT',
  url: string,
  what: string,
  body?: unknown,
): Promise<FalAnswer> {
  const headers: Record<string, string> = { authorization: `Key ${http.key}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const signal = AbortSignal.timeout(http.timeoutMs);
  try {
    const response = await http.fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      redirect: 'error',
    });
    const text = await readBoundedText(response);
    return { status: response.status, body: parseJson(text), text };
  } catch (error) {
    if (signal.aborted) throw new Error(`fal ${what} timed out after ${http.timeoutMs} ms`, { cause: error });
    throw new Error(scrub(`fal ${what} failed: ${reasonOf(error)}`, http.key), { cause: error });
  }
}

/** The readable reason of a fal error answer: its `detail` (string or validation list), else its text. */
export function describeFalError(answer: FalAnswer, key: string): string {
  const reason = reasonFromBody(answer.body) ?? (answer.text.trim() || `HTTP ${answer.status}`);
  return scrub(reason, key);
}

/** Removes the key from a text and caps its length. */
export function scrub(text: string, key: string): string {
  const clean = key ? text.replaceAll(key, '[redacted]') : text;
  return clean.length > MAX_MESSAGE_CHARS ? `${clean.slice(0, MAX_MESSAGE_CHARS)}…` : clean;
}

/** Whether a value is a non-null, non-array object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function reasonFromBody(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined;
  const { detail } = body;
  if (typeof detail === 'string' && detail) return detail;
  if (Array.isArray(detail) && detail.length > 0) return detail.map(describeDetailItem).join('; ');
  for (const field of ['error', 'message']) {
    const value = body[field];
    if (typeof value === 'string' && value) return value;
  }
  return undefined;
}

// fal's error objects: `{ loc: ['body', 'prompt'], msg, type, url?, ctx? }` (https://docs.fal.ai/errors).
function describeDetailItem(item: unknown): string {
  if (!isRecord(item)) return String(item);
  const msg = typeof item.msg === 'string' ? item.msg : typeof item.type === 'string' ? item.type : 'invalid';
  const loc = Array.isArray(item.loc) ? item.loc.filter((part, i) => !(i === 0 && part === 'body')) : [];
  return loc.length > 0 ? `${loc.join('.')}: ${msg}` : msg;
}

async function readBoundedText(response: Response): Promise<string> {
  if (!response.body) return '';
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await response.body.cancel().catch(() => {});
      throw new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

// Node's fetch says only "fetch failed"; the useful part (ECONNREFUSED, …) is its cause.
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause ? `${error.message} (${cause})` : error.message;
}
