// The fal provider: fal's queue API (https://docs.fal.ai/model-endpoints/queue). Submit is
// `POST <queue>/<endpoint id>`; status, result and cancel follow the `status_url`, `response_url` and
// `cancel_url` of fal's answer, which name only the app (owner/app) and drop the endpoint's sub-path.
import type { ProviderEndpoints } from '../../../schemas/models-catalog.ts';
import {
  ProviderRejection,
  type Generation,
  type MediaProvider,
  type ProviderHandle,
  type ProviderOutput,
  type ProviderResult,
  type ProviderStatus,
} from '../ports/media-provider.ts';
import { openDownload } from './fal-download.ts';
import { describeFalError, falCall, isRecord, scrub, type FalAnswer, type FalHttp } from './fal-http.ts';
import { ENDPOINT_OF_CAPABILITY, falInput } from './fal-input.ts';

/** Options of {@link createFalProvider}. */
export interface FalProviderOptions {
  /** `FAL_QUEUE_URL`, e.g. https://queue.fal.run (a trailing slash is ignored). */
  queueUrl: string;
  /** `FAL_KEY`; sent as `Authorization: Key <key>` to the queue, never put in a message. */
  key: string;
  endpoints: ProviderEndpoints;
  /** Per HTTP call (default 30 s); for output downloads, the longest wait for the next bytes. */
  requestTimeoutMs?: number;
  /** Largest output file accepted (default 512 MiB). */
  maxOutputBytes?: number;
  fetch?: typeof fetch;
}

/** The URLs of one queued request, as fal named them. */
interface RequestUrls {
  status_url: string;
  response_url: string;
  cancel_url: string;
}

// Statuses that end a request without a result; fal's documented ones are IN_QUEUE, IN_PROGRESS, COMPLETED.
const FAILED_STATUSES = new Set(['FAILED', 'ERROR', 'CANCELLED', 'CANCELED']);
// fal answers 400 with this kind of detail when a result is asked for too early; that is not the model's error.
const NOT_READY = /still in progress|in queue|not (yet )?(completed|ready)/i;

/** A `MediaProvider` backed by fal's queue API. */
export function createFalProvider(options: FalProviderOptions): MediaProvider {
  const queueUrl = options.queueUrl.replace(/\/+$/, '');
  const queueOrigin = new URL(queueUrl).origin;
  const http: FalHttp = {
    key: options.key,
    timeoutMs: options.requestTimeoutMs ?? 30_000,
    fetch: options.fetch ?? fetch,
  };
  const maxOutputBytes = options.maxOutputBytes ?? 512 * 1024 * 1024;

  // The key goes only to the configured queue host, whatever URL an answer (or a stored handle) names.
  function onQueueHost(url: string, what: string): string {
    let origin: string;
    try {
      origin = new URL(url).origin;
    } catch {
      throw new Error(`fal ${what} is not a URL`);
    }
    if (origin !== queueOrigin) throw new Error(`fal ${what} is not on the configured queue host`);
    return url;
  }

  // Only for answers (or handles) that lack fal's URLs: the documented rule, app id = owner/app.
  function documentedUrls(endpoint: string, requestId: string): RequestUrls {
    const appId = endpoint.split('/').slice(0, 2).join('/');
    const base = `${queueUrl}/${appId}/requests/${encodeURIComponent(requestId)}`;
    return { status_url: `${base}/status`, response_url: base, cancel_url: `${base}/cancel` };
  }

  function urlsOf(handle: ProviderHandle): RequestUrls {
    const fallback = documentedUrls(handle.endpoint, handle.requestId);
    const data = handle.data ?? {};
    return {
      status_url: onQueueHost(data.status_url ?? fallback.status_url, 'status URL'),
      response_url: onQueueHost(data.response_url ?? fallback.response_url, 'response URL'),
      cancel_url: onQueueHost(data.cancel_url ?? fallback.cancel_url, 'cancel URL'),
    };
  }

  function output(url: unknown, contentType: unknown, fallbackType: string): ProviderOutput | undefined {
    if (typeof url !== 'string' || !url) return undefined;
    return {
      contentType: typeof contentType === 'string' && contentType ? contentType : fallbackType,
      open: () =>
        openDownload(url, {
          timeoutMs: http.timeoutMs,
          maxBytes: maxOutputBytes,
          fetch: http.fetch,
          key: http.key,
        }),
    };
  }

  function outputsOf(body: Record<string, unknown>): ProviderOutput[] {
    const outputs: ProviderOutput[] = [];
    if (isRecord(body.video)) {
      const video = output(body.video.url, body.video.content_type, 'video/mp4');
      if (video) outputs.push(video);
    }
    if (Array.isArray(body.images)) {
      for (const image of body.images) {
        if (!isRecord(image)) continue;
        const produced = output(image.url, image.content_type, imageTypeOf(image.url));
        if (produced) outputs.push(produced);
      }
    }
    return outputs;
  }

  const reason = (answer: FalAnswer): string => describeFalError(answer, http.key);

  return {
    label: 'fal',

    async submit(generation: Generation): Promise<ProviderHandle> {
      const endpoint = options.endpoints[ENDPOINT_OF_CAPABILITY[generation.capability]];
      const answer = await falCall(http, 'POST', `${queueUrl}/${endpoint}`, 'submit', falInput(generation));
      if (answer.status >= 400 && answer.status < 500) {
        throw new ProviderRejection(`fal rejected the request: ${reason(answer)}`, answer.status);
      }
      if (answer.status < 200 || answer.status >= 300) {
        throw new Error(`fal submit answered HTTP ${answer.status}: ${reason(answer)}`);
      }
      const body = isRecord(answer.body) ? answer.body : {};
      const requestId = body.request_id;
      if (typeof requestId !== 'string' || !requestId) throw new Error('fal submit answer has no request_id');
      const fallback = documentedUrls(endpoint, requestId);
      const named = (field: keyof RequestUrls): string => {
        const value = body[field];
        return onQueueHost(typeof value === 'string' && value ? value : fallback[field], field);
      };
      return {
        endpoint,
        requestId,
        data: {
          status_url: named('status_url'),
          response_url: named('response_url'),
          cancel_url: named('cancel_url'),
        },
      };
    },

    async status(handle: ProviderHandle): Promise<ProviderStatus> {
      const answer = await falCall(http, 'GET', urlsOf(handle).status_url, 'status');
      if (answer.status === 404 || answer.status === 410) {
        return { state: 'failed', error: `fal does not know this request any more (HTTP ${answer.status})` };
      }
      if (answer.status < 200 || answer.status >= 300) {
        throw new Error(`fal status answered HTTP ${answer.status}: ${reason(answer)}`);
      }
      const body = isRecord(answer.body) ? answer.body : {};
      const status = body.status;
      const error = typeof body.error === 'string' && body.error ? scrub(body.error, http.key) : undefined;
      if (status === 'IN_QUEUE') return { state: 'queued' };
      if (status === 'IN_PROGRESS') return { state: 'running' };
      // A request that failed after its retries still ends COMPLETED, with `error` and `error_type` set.
      if (status === 'COMPLETED') return error ? { state: 'failed', error } : { state: 'completed' };
      if (typeof status === 'string' && FAILED_STATUSES.has(status)) {
        return { state: 'failed', error: error ?? `fal reported the request ${status}` };
      }
      throw new Error(`fal status answer has an unknown status (${scrub(String(status), http.key)})`);
    },

    async result(handle: ProviderHandle): Promise<ProviderResult> {
      const answer = await falCall(http, 'GET', urlsOf(handle).response_url, 'result');
      if (answer.status >= 200 && answer.status < 300) {
        return { ok: true, outputs: isRecord(answer.body) ? outputsOf(answer.body) : [] };
      }
      const why = reason(answer);
      // Retried at the next poll: fal is not done, the key or quota is wrong, or something other than fal
      // answered (an error without fal's JSON body, e.g. a proxy's 502 page).
      if (answer.status === 400 && NOT_READY.test(why)) throw new Error(`fal result is not ready: ${why}`);
      if ([401, 403, 429].includes(answer.status) || (answer.status >= 500 && answer.body === undefined)) {
        throw new Error(`fal result answered HTTP ${answer.status}: ${why}`);
      }
      if (answer.status === 404) return { ok: false, error: 'fal no longer has the result of this request' };
      // fal answers the model's own error here, with the model's status code.
      return { ok: false, error: why };
    },

    async cancel(handle: ProviderHandle): Promise<boolean> {
      try {
        const answer = await falCall(http, 'PUT', urlsOf(handle).cancel_url, 'cancel');
        const said = isRecord(answer.body) ? answer.body.status : undefined;
        return (
          answer.status >= 200 && answer.status < 300 && said !== 'ALREADY_COMPLETED' && said !== 'NOT_FOUND'
        );
      } catch {
        return false;
      }
    },
  };
}

function imageTypeOf(url: unknown): string {
  const path = typeof url === 'string' ? url.split(/[?#]/)[0]!.toLowerCase() : '';
  if (path.endsWith('.jpg') || path.endsWith('.jpeg')) return 'image/jpeg';
  if (path.endsWith('.webp')) return 'image/webp';
  return 'image/png';
}
