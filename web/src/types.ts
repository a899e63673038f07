// The shapes the dashboard reads, as the session API (docs/accounts.md) and /api/v1 (docs/api.md,
// docs/editor.md) answer them. Only the fields the pages use.

/** The scopes a key can be created with, in display order. */
export const SCOPES = [
  'models:read',
  'video:write',
  'image:write',
  'video-editor:read',
  'video-editor:write',
] as const;

export interface ApiKey {
  id: string;
  name: string | null;
  scopes: string[];
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

export interface Webhook {
  url: string | null;
  enabled: boolean;
}

export interface DeliveryAttempt {
  attempt: number;
  at: string;
  url: string;
  status: number | null;
  error: string | null;
  duration_ms: number | null;
}

export interface Delivery {
  id: string;
  job_id: string;
  event: string;
  state: string;
  attempts: DeliveryAttempt[];
  next_attempt_at: string | null;
  created_at: string;
}

export interface LedgerEntry {
  id: string;
  delta: number;
  balance_after: number;
  reason: string;
  job_id?: string | null;
  created_at: string;
}

export type JobStatus = 'processing' | 'completed' | 'failed' | 'cancelled';

export interface Job {
  job_id: string;
  status: JobStatus;
  model: string;
  type: 'video' | 'image';
  credits_consumed: number;
  refunded_credits: number;
  created_at: string;
  completed_at: string | null;
  result: { video?: string; images?: string[] } | null;
  error: string | null;
}

export interface ProjectSummary {
  id: string;
  name: string;
  aspect_ratio: string;
  updated_at: string;
}

export interface Project extends ProjectSummary {
  description: string;
  context_md: string;
  revision: number;
  created_at: string;
}

export interface Video {
  id: string;
  name: string;
  aspect_ratio: string;
  created_at: string;
}

export interface Asset {
  id: string;
  kind: 'image' | 'video' | 'audio';
  source: 'upload' | 'import' | 'agent_generate' | 'export';
  url: string;
  metadata: {
    name?: string;
    duration_sec?: number;
    width?: number;
    height?: number;
    prompt?: string;
    exported_from?: { video_id: string; revision: number; fit: string };
  };
  created_at: string;
}

export const TRACKS = ['video', 'voice', 'sfx', 'music'] as const;
export type Track = (typeof TRACKS)[number];

export interface Clip {
  id: string;
  video_id: string;
  track: Track;
  idx: number;
  asset_id: string;
  start_sec: number | null;
  trim_start_sec: number;
  duration_sec: number | null;
  volume: number;
}

export interface ProjectState {
  project: Project;
  videos: Video[];
  assets: Asset[];
  clips: Clip[];
}

export interface Message {
  id: string;
  role: 'user' | 'assistant';
  text: string;
  image_urls?: string[];
  turn_id: string;
  created_at: string;
}

/** One event of a project (docs/editor.md "Events"). */
export interface ProjectEvent {
  type: string;
  seq: number;
  ts: string;
  project_id: string;
  video_id: string | null;
  turn_id: string | null;
  data: Record<string, unknown>;
}
