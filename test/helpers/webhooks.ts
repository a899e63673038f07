// What every job-webhook e2e test checks and reads: the headers and signature of a delivery (our own HMAC
// from the raw body bytes, never the service's code), its body against the job, a key with its webhook set,
// the deliveries route, and polling.
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { adminClient, type RunningService } from './service.ts';
import { jobsClient, type Job } from './jobs.ts';
import type { ReceivedRequest } from './webhook-receiver.ts';

type Service = Pick<RunningService, 'url' | 'adminToken'>;

/** The webhook body as the design defines it: the job's fields but `refunded_credits` (`model`: see below). */
export type WebhookBody = Omit<Job, 'refunded_credits'>;

export const BODY_FIELDS = [
  'completed_at',
  'created_at',
  'credits_consumed',
  'error',
  'job_id',
  'model',
  'result',
  'status',
  'type',
].sort();

export interface DeliveryAttempt {
  attempt: number;
  at: string;
  url: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
}

/** A delivery as `GET /api/admin/v1/keys/<key_id>/deliveries` lists it. */
export interface Delivery {
  id: string;
  job_id: string;
  event: string;
  state: 'pending' | 'delivered' | 'failed' | 'dropped';
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
  created_at: string;
}

/** A key with image:write and its webhook set to `url`. */
export interface HookedKey {
  userId: string;
  keyId: string;
  token: string;
  /** The secret the first enablement showed. */
  secret: string;
  url: string;
}

export { sleep, until } from './wait.ts';

/** A header that is present once. */
export function header(req: Pick<ReceivedRequest, 'headers'>, name: string): string {
  const value = req.headers[name];
  assert.equal(typeof value, 'string', `header ${name} is present once`);
  return value as string;
}

export const bodyOf = (req: ReceivedRequest): WebhookBody =>
  JSON.parse(req.body.toString('utf8')) as WebhookBody;

/** Our own check of `X-Svc-Signature` against the raw bytes: HMAC-SHA256(secret, "<ts>.<raw body>"). */
export function verifies(req: Pick<ReceivedRequest, 'headers' | 'body'>, secret: string): boolean {
  const timestamp = header(req, 'x-svc-timestamp');
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header(req, 'x-svc-signature'));
  if (!match || match[1] !== timestamp) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(req.body).digest();
  const given = Buffer.from(match[2]!, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * A delivery request as docs/webhooks.md (The request) has it: POST, JSON, the user agent, a delivery id (and the event, when
 * given); a timestamp of the arrival time; a signature of that timestamp that verifies with `secret`.
 */
export function assertSigned(
  req: ReceivedRequest,
  secret: string,
  options: { event?: string; label?: string } = {},
) {
  const label = options.label ?? options.event ?? '';
  assert.equal(req.method, 'POST', label);
  assert.equal(header(req, 'content-type'), 'application/json', label);
  assert.equal(header(req, 'user-agent'), 'Svc-Webhooks/1.0', label);
  assert.match(header(req, 'x-svc-delivery-id'), /^dlv_[A-Za-z0-9_-]+$/, label);
  if (options.event !== undefined) assert.equal(header(req, 'x-svc-event'), options.event, label);
  const timestamp = header(req, 'x-svc-timestamp');
  assert.match(timestamp, /^\d+$/, `${label} X-Svc-Timestamp is integer Unix seconds`);
  assert.ok(
    Math.abs(Number(timestamp) - req.wallAt / 1000) <= 5,
    `${label} timestamp ${timestamp} is within 5 s of the arrival (${req.wallAt / 1000})`,
  );
  assert.match(header(req, 'x-svc-signature'), new RegExp(`^t=${timestamp},v1=[0-9a-f]{64}$`), label);
  assert.ok(verifies(req, secret), `${label} signature verifies with the key's secret`);
}

/**
 * The body carries exactly the designed fields, equal to the job as the public API reads it; `model` is a
 * provider endpoint id (not the public model name), `options.model` exactly when given. With
 * `sameResult: false` only whether there is a result must agree (its URLs may name another process's port).
 */
export function assertBodyMatchesJob(
  body: WebhookBody,
  job: Job,
  options: { model?: string; sameResult?: boolean } = {},
) {
  assert.deepEqual(Object.keys(body).sort(), BODY_FIELDS);
  const pick = (j: WebhookBody | Job) => ({
    job_id: j.job_id,
    status: j.status,
    type: j.type,
    credits_consumed: j.credits_consumed,
    created_at: j.created_at,
    completed_at: j.completed_at,
    error: j.error,
  });
  assert.deepEqual(pick(body), pick(job));
  if (options.sameResult !== false) assert.deepEqual(body.result, job.result);
  else assert.equal(body.result === null, job.result === null);
  assert.equal(typeof body.model, 'string');
  assert.ok(body.model.length > 0, 'model is a non-empty string');
  assert.notEqual(body.model, job.model, 'model is the provider endpoint id, not the public model name');
  if (options.model !== undefined) assert.equal(body.model, options.model);
}

let userNo = 0;

/** PUT the key's webhook URL; returns the secret the call showed (first enablement) or ''. */
export async function setWebhook(service: Service, keyId: string, url: string): Promise<string> {
  const answer = await adminClient(service).call<{ url: string; secret?: string }>(
    'PUT',
    `/keys/${keyId}/webhook`,
    { url },
  );
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.url, url);
  return answer.body.secret ?? '';
}

/** A new user with `credits` and `count` image keys, each with its own webhook URL (`urlOf(i)`). */
export async function hookedKeys(
  service: Service,
  count: number,
  urlOf: (i: number) => string,
  credits = 100_000,
): Promise<HookedKey[]> {
  const admin = adminClient(service);
  const userId = await admin.createUser(`webhooks${++userNo}-${Date.now()}@example.com`, credits);
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const key = await admin.createKey(userId, ['image:write']);
      const url = urlOf(i);
      const secret = await setWebhook(service, key.id, url);
      assert.match(secret, /^whsec_/, 'first enablement shows the secret');
      return { userId, keyId: key.id, token: key.apiKey, secret, url };
    }),
  );
}

/** The key's deliveries, newest first. */
export async function readDeliveries(service: Service, keyId: string): Promise<Delivery[]> {
  const answer = await adminClient(service).call<{ deliveries: Delivery[] }>(
    'GET',
    `/keys/${keyId}/deliveries?limit=100`,
  );
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.deliveries;
}

/** Submits an image job; returns its id. */
export async function submitImage(service: Service, token: string, prompt: string): Promise<string> {
  const answer = await jobsClient(() => service).submitImage(token, { prompt });
  assert.equal(answer.status, 202, JSON.stringify(answer.body));
  return answer.body.job_id as string;
}

/** The job as `GET /api/v1/jobs/<id>` shows it now. */
export async function readJob(service: Service, token: string, jobId: string): Promise<Job> {
  const answer = await jobsClient(() => service).getJob(token, jobId);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}
