// Where a request lives on fal's queue. Submit is `POST <queue>/<endpoint id>`; status, result and cancel
// follow the `status_url`, `response_url` and `cancel_url` of fal's answer, which name only the app
// (owner/app) and drop the endpoint's sub-path. Every URL is checked to be on the configured queue host: the
// key goes nowhere else, whatever URL an answer (or a stored handle) names.
import type { ProviderHandle } from '../ports/media-provider.ts';

/** The URLs of one queued request, as fal named them. */
export interface RequestUrls {
  status_url: string;
  response_url: string;
  cancel_url: string;
}

/** The URLs of fal's queue at one configured address. */
export interface FalQueueUrls {
  /** Where a generation for `endpoint` is submitted. */
  submit(endpoint: string): string;
  /** The URLs of a request fal just accepted: those its answer names, else the documented ones. */
  named(endpoint: string, requestId: string, answer: Record<string, unknown>): RequestUrls;
  /** The URLs of a stored request: those kept in its handle, else the documented ones. */
  of(handle: ProviderHandle): RequestUrls;
}

/** fal's queue at `FAL_QUEUE_URL` (a trailing slash is ignored). */
export function falQueueUrls(queueUrl: string): FalQueueUrls {
  const queue = queueUrl.replace(/\/+$/, '');
  const queueOrigin = new URL(queue).origin;

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
    const base = `${queue}/${appId}/requests/${encodeURIComponent(requestId)}`;
    return { status_url: `${base}/status`, response_url: base, cancel_url: `${base}/cancel` };
  }

  return {
    submit: (endpoint) => `${queue}/${endpoint}`,

    named(endpoint, requestId, answer) {
      const fallback = documentedUrls(endpoint, requestId);
      const named = (field: keyof RequestUrls): string => {
        const value = answer[field];
        return onQueueHost(typeof value === 'string' && value ? value : fallback[field], field);
      };
      return {
        status_url: named('status_url'),
        response_url: named('response_url'),
        cancel_url: named('cancel_url'),
      };
    },

    of(handle) {
      const fallback = documentedUrls(handle.endpoint, handle.requestId);
      const data = handle.data ?? {};
      return {
        status_url: onQueueHost(data.status_url ?? fallback.status_url, 'status URL'),
        response_url: onQueueHost(data.response_url ?? fallback.response_url, 'response URL'),
        cancel_url: onQueueHost(data.cancel_url ?? fallback.cancel_url, 'cancel URL'),
      };
    },
  };
}
