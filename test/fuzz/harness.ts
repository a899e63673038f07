// Sending a fuzz corpus and judging every answer: no 5xx, no hang (each request has a deadline), and every
// /api error a JSON `{ error: string }` (MCP's JSON-RPC errors excepted: their `error` is an object).
import assert from 'node:assert/strict';

/** The route families the corpus covers; the figures are reported per family. */
export const FAMILIES = [
  'jobs',
  'editor',
  'export',
  'uploads',
  'admin',
  'dashboard',
  'oauth',
  'mcp',
  'other',
] as const;
export type Family = (typeof FAMILIES)[number];

/** One request of the corpus. */
export interface FuzzCase {
  family: Family;
  label: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
  /** Longer for requests that do real work (exports, turns); the default bounds everything else. */
  timeoutMs?: number;
  /** The status this case must get, where the corpus targets a rule (the pixel bomb's 415). */
  expect?: number;
}

export interface FuzzAnswer {
  status: number;
  text: string;
  ms: number;
}

/** What one run of a corpus gave: answers by family and status, and the slowest answer. */
export class Tally {
  readonly byFamily = new Map<Family, Map<number, number>>();
  requests = 0;
  slowest = { ms: 0, label: '' };

  add(request: FuzzCase, answer: FuzzAnswer): void {
    this.requests++;
    const statuses = this.byFamily.get(request.family) ?? new Map<number, number>();
    statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    this.byFamily.set(request.family, statuses);
    if (answer.ms > this.slowest.ms) this.slowest = { ms: answer.ms, label: describe(request) };
  }

  count(family: Family, predicate: (status: number) => boolean = () => true): number {
    let total = 0;
    for (const [status, n] of this.byFamily.get(family) ?? []) if (predicate(status)) total += n;
    return total;
  }

  toString(): string {
    return FAMILIES.map((family) => {
      const statuses = [...(this.byFamily.get(family) ?? [])].sort(([a], [b]) => a - b);
      return `${family} ${this.count(family)} (${statuses.map(([s, n]) => `${s}×${n}`).join(' ')})`;
    }).join('; ');
  }
}

const DEFAULT_TIMEOUT_MS = 30_000;

export const describe = (request: FuzzCase, seed?: number) =>
  `${seed === undefined ? '' : `[seed ${seed}] `}${request.family} ${request.label}: ${request.method} ${request.path.slice(0, 160)}`;

/** Sends one case; a request without an answer by its deadline fails the run as a hang. */
export async function send(baseUrl: string, request: FuzzCase, seed: number): Promise<FuzzAnswer> {
  const started = performance.now();
  const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  try {
    const response = await fetch(`${baseUrl}${request.path}`, {
      method: request.method,
      headers: request.headers ?? {},
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
      // fetch refuses a body on GET and HEAD; the corpus's bodies there are sent without one.
      ...(request.body !== undefined && request.method !== 'GET' && request.method !== 'HEAD'
        ? { body: request.body }
        : {}),
    });
    const text = await response.text();
    return { status: response.status, text, ms: performance.now() - started };
  } catch (error) {
    const hung = (error as Error).name === 'TimeoutError';
    assert.fail(
      `${describe(request, seed)}: ${hung ? `no answer within ${timeoutMs} ms (a hang)` : String(error)}`,
    );
  }
}

/** The rules every answer keeps. */
export function check(request: FuzzCase, answer: FuzzAnswer, seed: number): void {
  const body = request.body?.toString('utf8') ?? '';
  const shown = `${describe(request, seed)} body ${JSON.stringify(body.slice(0, 300))}${body.length > 300 ? '…' : ''}`;
  assert.ok(answer.status < 500, `${shown} answered ${answer.status} ${answer.text.slice(0, 300)}`);
  if (request.expect !== undefined) {
    assert.equal(
      answer.status,
      request.expect,
      `${shown} answered ${answer.status} ${answer.text.slice(0, 300)}`,
    );
  }
  const path = request.path.split('?')[0]!;
  // A HEAD answer has no body; MCP's JSON-RPC errors carry an object as `error`.
  if (!path.startsWith('/api/') || answer.status < 400 || path === '/api/mcp' || request.method === 'HEAD')
    return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.text);
  } catch {
    assert.fail(
      `${shown} answered ${answer.status} with a body that is not JSON: ${answer.text.slice(0, 200)}`,
    );
  }
  assert.equal(
    typeof (parsed as { error?: unknown }).error,
    'string',
    `${shown}: ${answer.text.slice(0, 300)}`,
  );
}

/** Sends `cases` `concurrency` at a time, checking each answer; the answers in the cases' order. */
export async function run(
  baseUrl: string,
  cases: FuzzCase[],
  options: { seed: number; concurrency: number; tally?: Tally },
): Promise<FuzzAnswer[]> {
  const answers = new Array<FuzzAnswer>(cases.length);
  let nextIndex = 0;
  const worker = async () => {
    while (nextIndex < cases.length) {
      const index = nextIndex++;
      const request = cases[index]!;
      const answer = await send(baseUrl, request, options.seed);
      check(request, answer, options.seed);
      options.tally?.add(request, answer);
      answers[index] = answer;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return answers;
}
