import { Readable } from 'node:stream';
import { scrub } from './fal-http.ts';

/** Limits of one output download. */
export interface DownloadLimits {
  /** Longest wait for the answer's headers, then for each next chunk (an idle time-out, not a total one). */
  timeoutMs: number;
  maxBytes: number;
  fetch: typeof fetch;
  /** Scrubbed from messages, though it is never sent (see below). */
  key: string;
}

/**
 * Downloads one produced file as a stream. The key is not sent: fal's output files are public URLs on other
 * hosts (its CDN), and a result naming some other host must not receive the key. The time-out is an idle one
 * so that a large video on a slow link still arrives; the size cap is checked against `Content-Length` first
 * and then against the bytes actually received (the stream errors once past it).
 */
export async function openDownload(url: string, limits: DownloadLimits): Promise<Readable> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new Error('fal output URL is not a URL');
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') {
    throw new Error(`fal output URL has an unsupported scheme (${target.protocol})`);
  }
  const controller = new AbortController();
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, limits.timeoutMs);
  };
  const fail = (error: unknown): Error =>
    timedOut
      ? new Error(`fal output download timed out after ${limits.timeoutMs} ms without data`)
      : new Error(
          scrub(
            `fal output download failed: ${error instanceof Error ? error.message : String(error)}`,
            limits.key,
          ),
        );

  arm();
  let response: Response;
  try {
    response = await limits.fetch(target, { signal: controller.signal, redirect: 'follow' });
  } catch (error) {
    clearTimeout(timer);
    throw fail(error);
  }
  if (!response.ok || !response.body) {
    clearTimeout(timer);
    await response.body?.cancel().catch(() => {});
    throw new Error(`fal output download answered HTTP ${response.status}`);
  }
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limits.maxBytes) {
    clearTimeout(timer);
    await response.body.cancel().catch(() => {});
    throw new Error(`fal output is ${declared} bytes, over the ${limits.maxBytes}-byte cap`);
  }
  // Only time spent waiting on the network counts: a consumer that reads late must not trip the time-out.
  clearTimeout(timer);

  const reader = response.body.getReader();
  async function* chunks(): AsyncGenerator<Buffer> {
    let received = 0;
    try {
      for (;;) {
        arm();
        let step: Awaited<ReturnType<typeof reader.read>>;
        try {
          step = await reader.read();
        } catch (error) {
          throw fail(error);
        } finally {
          clearTimeout(timer);
        }
        if (step.done) return;
        received += step.value.byteLength;
        if (received > limits.maxBytes) throw new Error(`fal output exceeds the ${limits.maxBytes}-byte cap`);
        yield Buffer.from(step.value.buffer, step.value.byteOffset, step.value.byteLength);
      }
    } finally {
      // Ends the connection when the reader stops early (cap, time-out, or the consumer gave up).
      await reader.cancel().catch(() => {});
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}
