import type { Static } from 'typebox';
import { type SubmitResponse, type JobView } from '../../../schemas/jobs.ts';
import type { KeyPrincipal } from '../http/principal.ts';
import type { Scope } from '../../../schemas/scopes.ts';
import { ToolError, type ToolContext, type ToolLink } from './tool.ts';

// What the MCP tools share: media links, one-line summaries, scope and input checks, waiting that a
// cancellation stops, progress that only grows, and a project's events while a tool runs.

/** The MIME type of a `/media/...` URL, from its extension (media ids end in the probed type's extension). */
export function mediaMimeType(url: string): string | undefined {
  const extension = /\.([a-z0-9]{1,8})(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase();
  return extension ? MIME_TYPES[extension] : undefined;
}

const MIME_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  mp4: 'video/mp4',
  mov: 'video/quicktime',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  aac: 'audio/aac',
  m4a: 'audio/mp4',
};

/** A media link, with its MIME type when the URL tells it. */
export function link(uri: string, name: string, description?: string): ToolLink {
  const mimeType = mediaMimeType(uri);
  return {
    uri,
    name,
    ...(mimeType ? { mimeType } : {}),
    ...(description ? { description } : {}),
  };
}

/** The result media of a job. */
export function jobLinks(job: Pick<JobView, 'job_id' | 'result'>): ToolLink[] {
  const result = job.result;
  if (!result) return [];
  if ('video' in result) return [link(result.video, `${job.job_id} video`, 'Generated video')];
  return result.images.map((url, index) => link(url, `${job.job_id} image ${index + 1}`, 'Generated image'));
}

/** Links to assets (`url`). */
export function assetLinks(assets: readonly { id: string; kind: string; url: string }[]): ToolLink[] {
  return assets.map((asset) => link(asset.url, asset.id, `${asset.kind} asset`));
}

/** One line about a job. */
export function jobText(job: JobView): string {
  const base = `Job ${job.job_id} is ${job.status} (${job.model}, ${job.credits_consumed} credits`;
  const refunded = job.refunded_credits > 0 ? `, ${job.refunded_credits} refunded` : '';
  const error = job.error ? `: ${job.error}` : '';
  const count = job.result && 'images' in job.result ? `; ${job.result.images.length} image(s)` : '';
  return `${base}${refunded})${count}${error}`;
}

/** Whether the principal holds `scope`; throws the tool error the server gives for a tool's own scope. */
export function requireScope(principal: KeyPrincipal, scope: Scope): void {
  if (!principal.scopes.includes(scope)) throw new ToolError(`Missing required scope: ${scope}`);
}

/** Waits for `work`, or stops waiting when the call is cancelled (the work itself goes on, as on REST). */
export async function untilCancelled<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  void work.catch(() => undefined); // a cancelled caller does not hear of its failure
  if (signal.aborted) throw new ToolError('cancelled');
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(new ToolError('cancelled'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Progress that only grows (MCP requires it): reports are chained in order, and a report not above the last
 * one is dropped.
 */
export function progressReporter(ctx: ToolContext) {
  let last = -Infinity;
  let chain: Promise<void> = Promise.resolve();
  return {
    report(progress: number, total?: number, message?: string): void {
      if (!(progress > last)) return;
      last = progress;
      chain = chain.then(() => ctx.progress(progress, total, message)).catch(() => undefined);
    },
    get last() {
      return last;
    },
    settled: () => chain,
  };
}

/** A body checked as its route checks it: the route's message on failure. */
export function checked<T>(
  checker: { check(input: unknown): { ok: true; value: T } | { ok: false; message: string } },
  body: unknown,
): T {
  const result = checker.check(body);
  if (!result.ok) throw new ToolError(result.message);
  return result.value;
}

/** A submit's 202 body as a tool result. */
export function submitted(answer: Static<typeof SubmitResponse>) {
  return {
    structured: answer,
    text: `Job ${answer.job_id} is processing on ${answer.model} (${answer.credits_consumed} credits charged, ${answer.credits_remaining} left); call job_wait with this job_id`,
  };
}

/** A job as a tool result: the job, a line, its media. */
export function jobResult(job: JobView) {
  return { structured: job, text: jobText(job), links: jobLinks(job) };
}
