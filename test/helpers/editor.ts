import { adminClient, call, type ApiAnswer, type RunningService } from './service.ts';

// A small client of the editor API (spec §4.7, CONTRACT §4.1) for end-to-end tests: plain HTTP, as users call it.

const BASE = '/api/v1/media-studio/projects';
export const EDITOR_SCOPES = ['video-editor:read', 'video-editor:write'];

export interface EditorEvent {
  type: string;
  seq: number;
  ts: string;
  project_id: string;
  video_id: string | null;
  turn_id: string | null;
  data: Record<string, unknown>;
}

export interface Clip {
  id: string;
  video_id: string;
  track: string;
  idx: number;
  asset_id: string;
  start_sec: number | null;
  trim_start_sec: number;
  duration_sec: number | null;
  volume: number;
}

export interface Asset {
  id: string;
  kind: string;
  source: string;
  url: string;
  metadata: Record<string, unknown>;
}

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
    messages: (projectId: string, videoId: string, query = '') =>
      send('GET', `/${projectId}/videos/${videoId}/messages${query}`),
  };
}

/** The ids of the video-track clips of `state`, in order. */
export const videoTrack = (state: ProjectState, videoId?: string) =>
  state.clips
    .filter((clip) => clip.track === 'video' && (videoId === undefined || clip.video_id === videoId))
    .sort((a, b) => a.idx - b.idx);
