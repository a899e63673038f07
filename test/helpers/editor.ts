import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { adminClient, call, type ApiAnswer, type RunningService } from './service.ts';
import type { ProjectEvent } from '../../actors/ports/event-history.ts';
import type { AssetView, ClipView } from '../../actors/project-views.ts';

// A small client of the editor API (docs/editor.md) for end-to-end tests: plain HTTP, as users call it.

const BASE = '/api/v1/media-studio/projects';
export const EDITOR_SCOPES = ['video-editor:read', 'video-editor:write'];

/** The wire shapes, from the service's own types (one source: a change there shows here). */
export type EditorEvent = ProjectEvent;
export type Clip = ClipView;
export type Asset = Omit<AssetView, 'created_at'>;

export interface InstructAnswer {
  assistant_text: string;
  assets_created: Asset[];
  clips_created: Clip[];
  context_appended: boolean;
  aspect_ratio_changed: { video_id: string; from: string; to: string } | null;
  media_gen_done: boolean;
  agent_events: EditorEvent[];
  error?: string;
  credits_required?: number;
  credits_remaining?: number;
}

/** The export's 200 body (docs/editor.md, Export). */
export interface ExportAnswer {
  asset_id: string;
  video_url: string;
  duration_sec: number;
  video_clip_count: number;
  audio_overlay_count: number;
}

export interface ProjectState {
  project: { id: string; name: string; aspect_ratio: string; context_md: string; revision: number };
  videos: { id: string; name: string; aspect_ratio: string }[];
  assets: Asset[];
  clips: Clip[];
}

/** A user with a key (editor scopes by default) and `credits`, made through the admin API. */
export async function editorUser(
  service: Pick<RunningService, 'url' | 'adminToken'>,
  options: { credits?: number; scopes?: string[]; email?: string } = {},
): Promise<{ userId: string; keyId: string; token: string }> {
  const admin = adminClient(service);
  const email = options.email ?? `editor-${Math.random().toString(36).slice(2)}@example.com`;
  const userId = await admin.createUser(email, options.credits ?? 100_000);
  const key = await admin.createKey(userId, options.scopes ?? EDITOR_SCOPES);
  return { userId, keyId: key.id, token: key.apiKey };
}

/** The editor routes of one service, called with `token`. */
export function editorClient(service: () => Pick<RunningService, 'url'>, token: string) {
  const send = <T = Record<string, unknown>>(
    method: string,
    path: string,
    options: { body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> } = {},
  ): Promise<ApiAnswer<T>> => call<T>(service().url, method, `${BASE}${path}`, { token, ...options });
  return {
    send,
    async createProject(
      body: Record<string, unknown> = {},
    ): Promise<ProjectState['project'] & { id: string }> {
      const answer = await send<{ project: ProjectState['project'] }>('POST', '', { body });
      if (answer.status !== 200)
        throw new Error(`create project: ${answer.status} ${JSON.stringify(answer.body)}`);
      return answer.body.project;
    },
    state: (projectId: string, videoId?: string) =>
      send<ProjectState>('GET', `/${projectId}${videoId ? `?video_id=${videoId}` : ''}`),
    instruct: (projectId: string, body: Record<string, unknown>) =>
      send<InstructAnswer>('POST', `/${projectId}/instruct`, { body }),
    addClip: (projectId: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      send<{ clip: Clip }>('POST', `/${projectId}/clips`, { body, headers }),
    patchClip: (
      projectId: string,
      clipId: string,
      body: Record<string, unknown>,
      headers: Record<string, string> = {},
    ) => send<{ clip: Clip }>('PATCH', `/${projectId}/clips/${clipId}`, { body, headers }),
    deleteClip: (projectId: string, clipId: string, headers: Record<string, string> = {}) =>
      send('DELETE', `/${projectId}/clips/${clipId}`, { headers }),
    /** Uploads raw bytes as the body with a media `Content-Type`. */
    upload: (projectId: string, data: Buffer, contentType: string) =>
      send<{ asset: Asset; error?: string; message?: string }>('POST', `/${projectId}/assets`, {
        rawBody: data,
        headers: { 'content-type': contentType },
      }),
    importUrl: (projectId: string, url: string) =>
      send<{ asset: Asset; error?: string; message?: string }>('POST', `/${projectId}/assets`, {
        body: { url },
      }),
    /** `POST /<id>/export`: the 200 body, or `{ error, message }`. */
    exportVideo: (projectId: string, body: Record<string, unknown> = {}) =>
      send<ExportAnswer & { error?: string; message?: string }>('POST', `/${projectId}/export`, { body }),
    messages: (projectId: string, videoId: string, query = '') =>
      send('GET', `/${projectId}/videos/${videoId}/messages${query}`),
  };
}

/** The ids of the video-track clips of `state`, in order. */
export const videoTrack = (state: ProjectState, videoId?: string) =>
  state.clips
    .filter((clip) => clip.track === 'video' && (videoId === undefined || clip.video_id === videoId))
    .sort((a, b) => a.idx - b.idx);

// ---- Shared by the editor e2e tests (test/e2e/editor*.test.ts) ----

/** Short media made with the resolved ffmpeg, for uploads: a sine-tone WAV and a one-colour PNG. */
export function makeMedia(kind: 'wav' | 'png', options: { seconds?: number; colour?: string } = {}): Buffer {
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH });
  const input =
    kind === 'wav'
      ? ['-f', 'lavfi', '-i', `sine=frequency=440:duration=${options.seconds ?? 2}`, '-f', 'wav']
      : ['-f', 'lavfi', '-i', `color=c=${options.colour ?? 'red'}:s=64x64`, '-frames:v', '1'];
  if (kind === 'png') input.push('-f', 'image2pipe', '-c:v', 'png');
  return execFileSync(ffmpeg, ['-v', 'error', ...input, 'pipe:1'], { maxBuffer: 16 * 1024 * 1024 });
}

/** A 4-second 64×64 H.264 mp4 made with the resolved ffmpeg, with a 440 Hz AAC tone unless `sound` is false. */
export function makeVideo(options: { sound?: boolean } = {}): Buffer {
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH });
  const sound = options.sound ?? true;
  const dir = mkdtempSync(join(tmpdir(), 'mf-video-'));
  try {
    const file = join(dir, 'clip.mp4');
    execFileSync(ffmpeg, [
      ...[
        '-hide_banner',
        '-nostdin',
        '-v',
        'error',
        '-y',
        '-f',
        'lavfi',
        '-i',
        'testsrc2=size=64x64:rate=30',
      ],
      ...(sound ? ['-f', 'lavfi', '-i', 'sine=frequency=440'] : []),
      ...['-t', '4', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'],
      ...(sound ? ['-c:a', 'aac'] : []),
      file,
    ]);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Event types that change the timeline, library, context or project: they carry `data.revision` (docs/editor.md, Events). */
export const REVISING_EVENT_TYPES = new Set([
  'asset.created',
  'clip.created',
  'clip.updated',
  'clip.removed',
  'context.appended',
  'aspect_ratio.changed',
  'project.updated',
]);

/**
 * Checks one instruct answer (200) against docs/editor.md (Agent turns, Events): every field, events of this turn only,
 * in strictly increasing `seq`, from `turn.started` to `turn.completed`, revisions on changing events, at most
 * one media generation, a reply ending with a question. Returns the turn's id and what it charged.
 */
export function checkTurnAnswer(
  answer: ApiAnswer<InstructAnswer>,
  projectId: string,
): { turnId: string; creditsCharged: number; mediaStarted: EditorEvent[] } {
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const body = answer.body;
  assert.deepEqual(
    Object.keys(body).sort(),
    [
      'agent_events',
      'aspect_ratio_changed',
      'assets_created',
      'assistant_text',
      'clips_created',
      'context_appended',
      'media_gen_done',
    ],
    'instruct answers every spec field and nothing else',
  );
  assert.equal(typeof body.assistant_text, 'string');
  assert.match(body.assistant_text, /\?\s*$/, `the reply ends with a question: ${body.assistant_text}`);
  assert.ok(Array.isArray(body.assets_created) && Array.isArray(body.clips_created));
  assert.equal(typeof body.context_appended, 'boolean');
  assert.equal(typeof body.media_gen_done, 'boolean');
  assert.ok(body.aspect_ratio_changed === null || typeof body.aspect_ratio_changed === 'object');
  const events = body.agent_events;
  assert.ok(Array.isArray(events) && events.length >= 2, JSON.stringify(events));
  const turnId = events[0]!.turn_id;
  assert.match(String(turnId), /^turn_/);
  for (const [i, event] of events.entries()) {
    assert.deepEqual(
      Object.keys(event).sort(),
      ['data', 'project_id', 'seq', 'ts', 'turn_id', 'type', 'video_id'],
      JSON.stringify(event),
    );
    assert.equal(event.project_id, projectId);
    assert.equal(event.turn_id, turnId, `every event is this turn's: ${JSON.stringify(event)}`);
    assert.ok(Number.isInteger(event.seq), JSON.stringify(event));
    assert.ok(!Number.isNaN(Date.parse(event.ts)), event.ts);
    assert.equal(typeof event.data, 'object');
    if (i > 0) assert.ok(event.seq > events[i - 1]!.seq, `seq strictly increases at ${i}`);
    if (REVISING_EVENT_TYPES.has(event.type)) {
      assert.ok(Number.isInteger(event.data.revision), `${event.type} carries data.revision`);
    }
  }
  assert.equal(events[0]!.type, 'turn.started');
  const last = events.at(-1)!;
  assert.equal(last.type, 'turn.completed');
  assert.equal(last.data.assistant_text, body.assistant_text);
  assert.ok(Number.isInteger(last.data.credits_charged), JSON.stringify(last.data));
  const mediaStarted = events.filter((event) => event.type === 'media.started');
  assert.ok(mediaStarted.length <= 1, 'at most one media generation per turn');
  return { turnId: turnId!, creditsCharged: last.data.credits_charged as number, mediaStarted };
}

/** A message of a video's thread. */
export interface ThreadMessage {
  id: string;
  role: 'user' | 'assistant';
  text: string;
  image_urls?: string[];
  turn_id: string;
  created_at: string;
}

/** Credits and jobs of the key's user: the balance (`GET /api/v1/account`) and the job ids (`GET /api/v1/jobs`). */
export function accountClient(service: () => Pick<RunningService, 'url'>, token: string) {
  return {
    balance: async () =>
      (await call<{ credits: number }>(service().url, 'GET', '/api/v1/account', { token })).body.credits,
    jobs: async () =>
      (
        await call<{
          jobs: { job_id: string; status: string; credits_consumed: number; refunded_credits: number }[];
        }>(service().url, 'GET', '/api/v1/jobs?limit=100', { token })
      ).body.jobs,
  };
}

/** One turn's place in its project's event sequence: the seqs of its `turn.started` and its end event. */
export interface TurnSpan {
  turnId: string;
  started: number;
  ended: number;
  outcome: 'turn.completed' | 'turn.failed';
}

/** The span of the turn whose events instruct answered with (`agent_events`); fails when it has none. */
export function turnSpan(answer: Pick<InstructAnswer, 'agent_events'>): TurnSpan {
  const events = answer.agent_events;
  const started = events.find((event) => event.type === 'turn.started');
  const ended = events.find((event) => event.type === 'turn.completed' || event.type === 'turn.failed');
  if (!started || !ended) throw new Error(`no turn.started/ended in ${JSON.stringify(events)}`);
  const turnId = started.turn_id!;
  for (const event of events) {
    if (event.turn_id !== turnId)
      throw new Error(`event of another turn in the answer: ${JSON.stringify(event)}`);
  }
  return { turnId, started: started.seq, ended: ended.seq, outcome: ended.type as TurnSpan['outcome'] };
}

/** The first pair of spans whose [started, ended] intervals overlap, or null when none do. */
export function overlappingSpans(spans: TurnSpan[]): [TurnSpan, TurnSpan] | null {
  const sorted = [...spans].sort((a, b) => a.started - b.started);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.started <= sorted[i - 1]!.ended) return [sorted[i - 1]!, sorted[i]!];
  }
  return null;
}

/** A user's credit ledger entry (docs/operator.md, Admin API: `GET /api/admin/v1/users/<id>/ledger`). */
export interface LedgerEntry {
  id: string;
  delta: number;
  balance_after: number;
  reason: string;
  /** The charge's idempotency key (an agent turn's is `turn:<turn_id>`). */
  op_id?: string;
  job_id?: string;
  created_at: string;
}

/** The user's ledger, newest first, through the admin API. */
export async function ledgerOf(
  service: Pick<RunningService, 'url' | 'adminToken'>,
  userId: string,
): Promise<LedgerEntry[]> {
  const answer = await adminClient(service).call<{ entries: LedgerEntry[] }>(
    'GET',
    `/users/${userId}/ledger`,
  );
  if (answer.status !== 200) throw new Error(`ledger: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.entries;
}

/** The key's balance (`GET /api/v1/account`). */
export async function balanceOf(service: Pick<RunningService, 'url'>, token: string): Promise<number> {
  const answer = await call<{ credits: number }>(service.url, 'GET', '/api/v1/account', { token });
  if (answer.status !== 200) throw new Error(`account: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body.credits;
}

/**
 * Runs a test body; when it fails, prints the services' warning and error log lines first (the last 60), so
 * a failure under CI load says what the service saw.
 */
export async function withServiceLogs<T>(
  services: () => readonly (RunningService | undefined)[],
  body: () => Promise<T>,
): Promise<T> {
  try {
    return await body();
  } catch (error) {
    const lines = services()
      .flatMap((service) => service?.lines ?? [])
      .filter((line) => /"level":(40|50|60)\b/.test(line))
      .slice(-60);
    console.log(`service warnings and errors before the failure:\n${lines.join('\n')}`);
    throw error;
  }
}
