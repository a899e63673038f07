// A fake of fal's queue API on a random loopback port, written from fal's documentation:
// - Queue endpoints, the sub-path rule and the submit answer (request_id, status_url, response_url,
//   cancel_url): https://docs.fal.ai/model-endpoints/queue and https://fal.ai/docs/api-reference/inference-api
//   ("Put the full model ID in the submit … URL. The status, result, and cancel URLs use only the owner and
//   the app"; status answers 202 while queued or in progress, 200 once complete).
// - Statuses IN_QUEUE (with queue_position) → IN_PROGRESS → COMPLETED, `logs` only with `?logs=1`, `metrics`
//   when complete: https://docs.fal.ai/documentation/model-apis/inference/queue
// - Cancel is a PUT: 202 {"status":"CANCELLATION_REQUESTED"} while queued, 400 {"status":"ALREADY_COMPLETED"}
//   otherwise, NOT_FOUND for unknown ids: https://fal.ai/docs/inference-api/queue/cancel (we narrow it
//   to queued requests, as fal's older page did: "Cancels a request that has not started processing").
// - The response URL answers the model's own status code and body, errors included:
//   https://fal.ai/docs/inference-api/queue/result
// - Error bodies: `detail` is a list of {loc, msg, type, url, ctx?} for validation and model errors
//   (https://docs.fal.ai/errors); infrastructure failures carry a string `detail` and `error_type`
//   (https://fal.ai/docs/documentation/model-apis/request-errors).
// - `Authorization: Key <FAL_KEY>` on every queue call (401 otherwise).
// Model inputs follow fal's Seedance 2.0 (video: `duration` a string "4"…"15", 480p/720p) and nano-banana
// (images: `num_images` 1–4, `image_urls` for edit) schemas; outputs are `{ video: File }` and
// `{ images: File[] }`. Output files are served by this server, without authentication, like fal's CDN.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { deflateSync, crc32 } from 'node:zlib';
import { DEFAULT_PROVIDER_ENDPOINTS, type ProviderEndpoints } from '../../schemas/models-catalog.ts';

/** What an endpoint does, which fixes its input rules and its output. */
type EndpointKind = 'text-to-video' | 'image-to-video' | 'text-to-image' | 'image-edit';

type QueueStatus = 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED';

/** A scripted HTTP answer. */
export interface ScriptedAnswer {
  status: number;
  body: unknown;
}

/** Calls the fake can be told never to answer ('file-body': headers and a first chunk, then silence). */
export type HangPoint = 'submit' | 'status' | 'response' | 'cancel' | 'file' | 'file-body';

/** How the fake behaves; read when a request is submitted (schedule, outcome) or answered (the rest). */
export interface FakeFalBehaviour {
  /** Time a new request spends IN_QUEUE; `Infinity` keeps it there until {@link FakeFal.advance}. */
  queueMs: number;
  /** Time a started request spends IN_PROGRESS; `Infinity` keeps it there until {@link FakeFal.advance}. */
  runMs: number;
  /** What a completed request yields: files, a success with no files, or the model's error. */
  outcome: 'files' | 'empty' | 'model-error';
  /** The model's error answer at the response URL when `outcome` is 'model-error'. */
  modelError: ScriptedAnswer;
  /** Whether a failed request's status carries `error`/`error_type` (else it is a plain COMPLETED). */
  statusCarriesError: boolean;
  /** Answered to every submit while set (after authentication), e.g. a 5xx. */
  submitAnswer: ScriptedAnswer | null;
  /** Answered to every status call while set (after authentication), e.g. a 500 or a FAILED status. */
  statusAnswer: ScriptedAnswer | null;
  /** Calls left unanswered (the connection stays open until `stop()`). */
  hang: HangPoint[];
  /** The bytes served as each video and each image. */
  videoBytes: Buffer;
  imageBytes: Buffer;
  /** Serve files with `Content-Length` (true) or chunked (false). */
  fileContentLength: boolean;
  /** Leave the URLs out of the submit answer (only `request_id`). */
  submitOmitsUrls: boolean;
  /** The base of the URLs the submit answer names; defaults to this server's own request base. */
  urlBase: string | null;
}

/** One call the fake received. */
export interface ReceivedRequest {
  method: string;
  path: string;
  query: string;
  authorization: string | undefined;
  body: unknown;
}

/** Options of {@link startFakeFal}. */
export interface FakeFalOptions {
  /** The accepted key (default 'fake-fal-key'). */
  key?: string;
  /** The endpoints served (default: the models catalogue's). */
  endpoints?: ProviderEndpoints;
  /**
   * A path prefix under which status, result and cancel are served, and which the submit answer's URLs name
   * (default '': fal's documented `<queue>/<owner>/<app>/requests/<id>` shape). With a prefix, a client that
   * builds those URLs by hand instead of following them gets 404s.
   */
  requestPathPrefix?: string;
}

/** A running fake fal queue. */
export interface FakeFal {
  /** The queue base URL (what `FAL_QUEUE_URL` would be). */
  url: string;
  key: string;
  requests: ReceivedRequest[];
  setBehaviour(patch: Partial<FakeFalBehaviour>): void;
  /** Moves a request one step on (IN_QUEUE → IN_PROGRESS → COMPLETED) now. */
  advance(requestId: string): void;
  /** Where a request stands, or undefined when unknown. */
  stateOf(requestId: string): QueueStatus | 'CANCELLED' | undefined;
  stop(): Promise<void>;
}

interface QueuedRequest {
  id: string;
  appId: string;
  kind: EndpointKind;
  input: Record<string, unknown>;
  state: QueueStatus | 'CANCELLED';
  since: number;
  queueMs: number;
  runMs: number;
  outcome: FakeFalBehaviour['outcome'];
  modelError: ScriptedAnswer;
  submittedAt: number;
}

const VIDEO_DURATIONS = ['auto', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14', '15'];
const VIDEO_RESOLUTIONS = ['480p', '720p'];
const VIDEO_ASPECT_RATIOS = ['auto', '21:9', '16:9', '4:3', '1:1', '3:4', '9:16'];
const IMAGE_ASPECT_RATIOS = ['21:9', '16:9', '3:2', '4:3', '5:4', '1:1', '4:5', '3:4', '2:3', '9:16'];

/** A small valid PNG (solid colour), built in code. */
export function tinyPng(width = 4, height = 4): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'ascii');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB, no interlace
  const row = Buffer.concat([
    Buffer.from([0]),
    Buffer.from(Array.from({ length: width }, () => [200, 60, 30]).flat()),
  ]);
  const pixels = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(pixels)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * The head of an MP4 file (`ftyp` and an empty `mdat` box): enough for signature checks, not a playable clip.
 * Tests that decode outputs pass real ffmpeg-made bytes as `videoBytes`.
 */
export function tinyMp4Header(): Buffer {
  const box = (type: string, payload: Buffer): Buffer => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(8 + payload.length, 0);
    head.write(type, 4, 'ascii');
    return Buffer.concat([head, payload]);
  };
  const ftyp = Buffer.concat([
    Buffer.from('isom'),
    Buffer.from([0, 0, 2, 0]),
    Buffer.from('isomiso2avc1mp41'),
  ]);
  return Buffer.concat([box('ftyp', ftyp), box('free', Buffer.alloc(0)), box('mdat', Buffer.alloc(0))]);
}

function endpointKinds(endpoints: ProviderEndpoints): Map<string, EndpointKind> {
  return new Map<string, EndpointKind>([
    [endpoints.textToVideo, 'text-to-video'],
    [endpoints.fastTextToVideo, 'text-to-video'],
    [endpoints.imageToVideo, 'image-to-video'],
    [endpoints.textToImage, 'text-to-image'],
    [endpoints.imageEdit, 'image-edit'],
  ]);
}

function fieldError(field: string, msg: string, type: string): Record<string, unknown> {
  return { loc: ['body', field], msg, type, url: `https://docs.fal.ai/errors#${type}` };
}

/** fal's 422 validation of a model input; an empty list means valid. */
function validate(kind: EndpointKind, input: Record<string, unknown>): Record<string, unknown>[] {
  const errors: Record<string, unknown>[] = [];
  const oneOf = (field: string, allowed: string[]): void => {
    const value = input[field];
    if (value !== undefined && !(typeof value === 'string' && allowed.includes(value))) {
      errors.push(fieldError(field, `Input should be ${allowed.map((a) => `'${a}'`).join(', ')}`, 'enum'));
    }
  };
  const isUrl = (value: unknown): boolean => typeof value === 'string' && /^https?:\/\/\S+$/.test(value);
  if (typeof input.prompt !== 'string') errors.push(fieldError('prompt', 'Field required', 'missing'));
  else if (input.prompt.length === 0)
    errors.push(fieldError('prompt', 'String should have at least 1 character', 'string_too_short'));
  if (input.seed !== undefined && !Number.isInteger(input.seed)) {
    errors.push(fieldError('seed', 'Input should be a valid integer', 'int_type'));
  }
  if (kind === 'text-to-video' || kind === 'image-to-video') {
    oneOf('duration', VIDEO_DURATIONS);
    oneOf('resolution', VIDEO_RESOLUTIONS);
    oneOf('aspect_ratio', VIDEO_ASPECT_RATIOS);
    if (input.generate_audio !== undefined && typeof input.generate_audio !== 'boolean') {
      errors.push(fieldError('generate_audio', 'Input should be a valid boolean', 'bool_type'));
    }
    if (kind === 'image-to-video' && !isUrl(input.image_url)) {
      errors.push(fieldError('image_url', 'Field required', 'missing'));
    }
    return errors;
  }
  oneOf('aspect_ratio', IMAGE_ASPECT_RATIOS);
  const n = input.num_images;
  if (n !== undefined && !(Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 4)) {
    errors.push(fieldError('num_images', 'Input should be between 1 and 4', 'less_than_equal'));
  }
  if (kind === 'image-edit') {
    const urls = input.image_urls;
    if (!Array.isArray(urls) || urls.length === 0)
      errors.push(fieldError('image_urls', 'Field required', 'missing'));
    else if (!urls.every(isUrl))
      errors.push(fieldError('image_urls', 'Input should be a valid URL', 'url_parsing'));
  }
  return errors;
}

const DEFAULT_MODEL_ERROR: ScriptedAnswer = {
  status: 422,
  body: {
    detail: [
      {
        loc: ['body', 'prompt'],
        msg: 'The content could not be processed because it contained material flagged by a content checker.',
        type: 'content_policy_violation',
        url: 'https://docs.fal.ai/errors#content_policy_violation',
      },
    ],
  },
};

/** Starts a fake fal queue on a random loopback port. */
export async function startFakeFal(options: FakeFalOptions = {}): Promise<FakeFal> {
  const key = options.key ?? 'fake-fal-key';
  const kinds = endpointKinds(options.endpoints ?? DEFAULT_PROVIDER_ENDPOINTS);
  const apps = new Set([...kinds.keys()].map((id) => id.split('/').slice(0, 2).join('/')));
  const prefix = (options.requestPathPrefix ?? '').replace(/\/+$/, '');
  const requests: ReceivedRequest[] = [];
  const queue = new Map<string, QueuedRequest>();
  const files = new Map<string, { bytes: () => Buffer; contentType: string }>();
  const behaviour: FakeFalBehaviour = {
    queueMs: 30,
    runMs: 30,
    outcome: 'files',
    modelError: DEFAULT_MODEL_ERROR,
    statusCarriesError: true,
    submitAnswer: null,
    statusAnswer: null,
    hang: [],
    videoBytes: tinyMp4Header(),
    imageBytes: tinyPng(),
    fileContentLength: true,
    submitOmitsUrls: false,
    urlBase: null,
  };
  let base = '';

  // States move lazily, when asked about, by the schedule fixed at submit time.
  function refresh(request: QueuedRequest): void {
    const now = Date.now();
    if (request.state === 'IN_QUEUE' && now - request.since >= request.queueMs) {
      request.state = 'IN_PROGRESS';
      request.since += request.queueMs;
    }
    if (request.state === 'IN_PROGRESS' && now - request.since >= request.runMs) {
      request.state = 'COMPLETED';
      request.since += request.runMs;
    }
  }

  function urlsOf(request: QueuedRequest): Record<string, string> {
    const root = `${behaviour.urlBase ?? base + prefix}/${request.appId}/requests/${request.id}`;
    return { response_url: root, status_url: `${root}/status`, cancel_url: `${root}/cancel` };
  }

  function queuePosition(request: QueuedRequest): number {
    let ahead = 0;
    for (const other of queue.values()) {
      refresh(other);
      if (other.state === 'IN_QUEUE' && other.submittedAt < request.submittedAt) ahead += 1;
    }
    return ahead;
  }

  function failed(request: QueuedRequest): { error: string; error_type: string } | undefined {
    if (request.state === 'CANCELLED')
      return { error: 'Request was cancelled', error_type: 'client_cancelled' };
    if (request.state === 'COMPLETED' && request.outcome === 'model-error') {
      const body = request.modelError.body as { detail?: unknown };
      const first = Array.isArray(body?.detail)
        ? (body.detail[0] as { msg?: string; type?: string })
        : undefined;
      return {
        error: first?.msg ?? (typeof body?.detail === 'string' ? body.detail : 'Model error'),
        error_type: first?.type ?? 'runner_server_error',
      };
    }
    return undefined;
  }

  function output(request: QueuedRequest): Record<string, unknown> {
    if (request.outcome === 'empty') return request.kind.endsWith('video') ? { video: null } : { images: [] };
    const file = (name: string, contentType: string, bytes: () => Buffer): Record<string, unknown> => {
      const path = `/files/${request.id}/${name}`;
      files.set(path, { bytes, contentType });
      return { url: `${base}${path}`, content_type: contentType, file_name: name, file_size: bytes().length };
    };
    if (request.kind.endsWith('video')) {
      return {
        video: file('output.mp4', 'video/mp4', () => behaviour.videoBytes),
        seed: request.input.seed ?? 42,
      };
    }
    const count = typeof request.input.num_images === 'number' ? request.input.num_images : 1;
    const images = Array.from({ length: count }, (_, i) =>
      file(`image-${i}.png`, 'image/png', () => behaviour.imageBytes),
    );
    return { images, description: '' };
  }

  function send(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  function serveFile(res: ServerResponse, path: string, hangBody: boolean): void {
    const file = files.get(path);
    if (!file) return send(res, 404, { detail: 'Not Found' });
    const bytes = file.bytes();
    const headers: Record<string, string | number> = { 'content-type': file.contentType };
    if (behaviour.fileContentLength) headers['content-length'] = bytes.length;
    res.writeHead(200, headers);
    if (hangBody) {
      res.write(bytes.subarray(0, Math.min(16, bytes.length)));
      return;
    }
    // Several writes, so that a chunked answer really comes in pieces.
    for (let offset = 0; offset < bytes.length; offset += 16 * 1024)
      res.write(bytes.subarray(offset, offset + 16 * 1024));
    res.end();
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: unknown = raw;
    try {
      body = raw ? (JSON.parse(raw) as unknown) : undefined;
    } catch {
      // kept as text; submit answers it with a 422 below
    }
    const method = req.method ?? 'GET';
    requests.push({
      method,
      path: url.pathname,
      query: url.search,
      authorization: req.headers.authorization,
      body,
    });
    const hangs = (point: HangPoint): boolean => behaviour.hang.includes(point);

    if (url.pathname.startsWith('/files/')) {
      if (hangs('file')) return;
      return serveFile(res, url.pathname, hangs('file-body'));
    }
    if (req.headers.authorization !== `Key ${key}`) {
      return send(res, 401, {
        detail: 'Unauthorized: a valid `Authorization: Key <key>` header is required',
      });
    }

    const kind = method === 'POST' ? kinds.get(url.pathname.slice(1)) : undefined;
    if (kind) {
      if (hangs('submit')) return;
      if (behaviour.submitAnswer)
        return send(res, behaviour.submitAnswer.status, behaviour.submitAnswer.body);
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return send(res, 422, {
          detail: [fieldError('body', 'Input should be a valid JSON object', 'model_attributes_type')],
        });
      }
      const input = body as Record<string, unknown>;
      const errors = validate(kind, input);
      if (errors.length > 0) return send(res, 422, { detail: errors });
      const now = Date.now();
      const request: QueuedRequest = {
        id: randomUUID(),
        appId: url.pathname.slice(1).split('/').slice(0, 2).join('/'),
        kind,
        input,
        state: 'IN_QUEUE',
        since: now,
        queueMs: behaviour.queueMs,
        runMs: behaviour.runMs,
        outcome: behaviour.outcome,
        modelError: behaviour.modelError,
        submittedAt: now,
      };
      queue.set(request.id, request);
      const answer: Record<string, unknown> = { status: 'IN_QUEUE', request_id: request.id };
      if (!behaviour.submitOmitsUrls)
        Object.assign(answer, urlsOf(request), { queue_position: queuePosition(request) });
      return send(res, 200, answer);
    }

    // <prefix>/<owner>/<app>/requests/<id>[/status|/cancel]: exactly two segments name the app.
    const match = url.pathname.startsWith(`${prefix}/`)
      ? /^\/([^/]+\/[^/]+)\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(url.pathname.slice(prefix.length))
      : null;
    const request = match ? queue.get(match[2]!) : undefined;
    if (!match || !apps.has(match[1]!)) return send(res, 404, { detail: 'Not Found' });
    const operation = match[3] ?? '';
    if (!request || request.appId !== match[1]) {
      return operation === '/cancel'
        ? send(res, 404, { status: 'NOT_FOUND' })
        : send(res, 404, { detail: 'Request not found' });
    }
    refresh(request);

    if (operation === '/status') {
      if (method !== 'GET') return send(res, 405, { detail: 'Method Not Allowed' });
      if (hangs('status')) return;
      if (behaviour.statusAnswer)
        return send(res, behaviour.statusAnswer.status, behaviour.statusAnswer.body);
      const withLogs = url.searchParams.get('logs') === '1';
      const state = request.state === 'CANCELLED' ? 'COMPLETED' : request.state;
      const answer: Record<string, unknown> = { status: state, request_id: request.id, ...urlsOf(request) };
      if (state === 'IN_QUEUE') answer.queue_position = queuePosition(request);
      answer.logs =
        withLogs && state !== 'IN_QUEUE'
          ? [
              {
                message: 'generating',
                level: 'INFO',
                source: 'user',
                timestamp: new Date(request.since).toISOString(),
              },
            ]
          : null;
      if (state === 'COMPLETED') answer.metrics = { inference_time: request.runMs / 1000 };
      const failure = failed(request);
      if (failure && behaviour.statusCarriesError) Object.assign(answer, failure);
      return send(res, state === 'COMPLETED' ? 200 : 202, answer);
    }
    if (operation === '/cancel') {
      if (method !== 'PUT') return send(res, 405, { detail: 'Method Not Allowed' });
      if (hangs('cancel')) return;
      if (request.state !== 'IN_QUEUE') return send(res, 400, { status: 'ALREADY_COMPLETED' });
      request.state = 'CANCELLED';
      return send(res, 202, { status: 'CANCELLATION_REQUESTED' });
    }
    if (method !== 'GET') return send(res, 405, { detail: 'Method Not Allowed' });
    if (hangs('response')) return;
    if (request.state === 'IN_QUEUE' || request.state === 'IN_PROGRESS') {
      return send(res, 400, { detail: 'Request is still in progress' });
    }
    if (request.state === 'CANCELLED') {
      return send(res, 400, { detail: 'Request was cancelled', error_type: 'client_cancelled' });
    }
    if (request.outcome === 'model-error')
      return send(res, request.modelError.status, request.modelError.body);
    return send(res, 200, output(request));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { detail: String(error), error_type: 'internal_error' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    key,
    requests,
    setBehaviour(patch) {
      Object.assign(behaviour, patch);
    },
    advance(requestId) {
      const request = queue.get(requestId);
      if (!request) throw new Error(`fake fal: no request ${requestId}`);
      refresh(request);
      const now = Date.now();
      if (request.state === 'IN_QUEUE') request.state = 'IN_PROGRESS';
      else if (request.state === 'IN_PROGRESS') request.state = 'COMPLETED';
      request.since = now;
    },
    stateOf(requestId) {
      const request = queue.get(requestId);
      if (request) refresh(request);
      return request?.state;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
