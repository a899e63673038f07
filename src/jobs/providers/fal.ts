// The fal provider: fal's queue API (https://docs.fal.ai/model-endpoints/queue). A request is submitted to
// its endpoint, then polled, read and cancelled at the URLs fal names for it (fal-urls.ts).
import type { ProviderEndpoints } from '../../../schemas/models-catalog.ts';
import {
  ProviderRejection,
  type Generation,
  type MediaProvider,
  type ProviderHandle,
  type ProviderResult,
  type ProviderStatus,
} from '../ports/media-provider.ts';
import type { DownloadLimits } from './fal-download.ts';
import { describeFalError, falCall, isRecord, scrub, type FalAnswer, type FalHttp } from './fal-http.ts';
import { ENDPOINT_OF_CAPABILITY, falInput } from './fal-input.ts';
import { falOutputs } from './fal-outputs.ts';
import { falQueueUrls } from './fal-urls.ts';

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

// Statuses that end a request without a result; fal's documented ones are IN_QUEUE, IN_PROGRESS, COMPLETED.
const FAILED_STATUSES = new Set(['FAILED', 'ERROR', 'CANCELLED', 'CANCELED']);
// fal answers 400 with this kind of detail when a result is asked for too early; that is not the model's error.
const NOT_READY = /still in progress|in queue|not (yet )?(completed|ready)/i;

/** A `MediaProvider` backed by fal's queue API. */
export function createFalProvider(options: FalProviderOptions): MediaProvider {
  const urls = falQueueUrls(options.queueUrl);
  const http: FalHttp = {
    key: options.key,
    timeoutMs: options.requestTimeoutMs ?? 30_000,
    fetch: options.fetch ?? fetch,
  };
  const downloads: DownloadLimits = {
    timeoutMs: http.timeoutMs,
    maxBytes: options.maxOutputBytes ?? 512 * 1024 * 1024,
    fetch: http.fetch,
    key: http.key,
  };

  const reason = (answer: FalAnswer): string => describeFalError(answer, http.key);

  return {
    label: 'fal',

    async submit(generation: Generation): Promise<ProviderHandle> {
      const endpoint = options.endpoints[ENDPOINT_OF_CAPABILITY[generation.capability]];
      const answer = await falCall(http, 'POST', urls.submit(endpoint), 'submit', falInput(generation));
      if (answer.status >= 400 && answer.status < 500) {
        throw new ProviderRejection(`fal rejected the request: ${reason(answer)}`, answer.status);
      }
      if (answer.status < 200 || answer.status >= 300) {
        throw new Error(`fal submit answered HTTP ${answer.status}: ${reason(answer)}`);
      }
      const body = isRecord(answer.body) ? answer.body : {};
      const requestId = body.request_id;
      if (typeof requestId !== 'string' || !requestId) throw new Error('fal submit answer has no request_id');
      return { endpoint, requestId, data: { ...urls.named(endpoint, requestId, body) } };
    },

    async status(handle: ProviderHandle): Promise<ProviderStatus> {
      const answer = await falCall(http, 'GET', urls.of(handle).status_url, 'status');
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
      const answer = await falCall(http, 'GET', urls.of(handle).response_url, 'result');
      if (answer.status >= 200 && answer.status < 300) {
        return { ok: true, outputs: isRecord(answer.body) ? falOutputs(answer.body, downloads) : [] };
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
        const answer = await falCall(http, 'PUT', urls.of(handle).cancel_url, 'cancel');
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
