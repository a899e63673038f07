// The plain values the shapes are made of: scopes, tracks, ratios, statuses, limits, event names. This module
// is pure (no TypeBox, nothing of Node, and it imports only pure modules), so the dashboard may import it as
// values (web/src/api-types.ts) and its bundle stays free of server code; test/unit/web-boundary.test.ts
// keeps it so.

export { SCOPES, DEFAULT_SCOPE, type Scope } from './scopes.ts';
export {
  ASSET_KINDS,
  ASSET_SOURCES,
  CLIP_VOLUME_MAX,
  DEFAULT_PROJECT_NAME,
  INSTRUCTION_MAX,
  PROJECT_ASPECT_RATIOS,
  PROJECT_NAME_MAX,
  TRACKS,
  TURN_CREDITS,
  trackAccepts,
  type AssetKind,
  type AssetSource,
  type ProjectAspectRatio,
  type Track,
} from './editor-terms.ts';

// Where clips play on a video's timeline, as the export plays them: the dashboard's timeline and preview place
// clips with the same arithmetic as the export (docs/editor.md, Transitions).
export { timelinePlacements, type ClipSource } from './clip-bounds.ts';

/** The aspect ratio of a project created without one (docs/editor.md, `POST /projects`). */
export const DEFAULT_ASPECT_RATIO = '9:16';

/** A job's status as the API shows it (docs/api.md); the stored record has more, internal, states. */
export const JOB_STATUSES = ['processing', 'completed', 'failed', 'cancelled'] as const;
export type PublicJobStatus = (typeof JOB_STATUSES)[number];

/** The longest name of an API key. */
export const KEY_NAME_MAX = 100;

/** The id prefix of a webhook's test deliveries (docs/webhooks.md "Test deliveries"). */
export const TEST_DELIVERY_PREFIX = 'dlv_test_';

/** Media types an upload may be sent as (docs/editor.md "Uploads and imports"); the bytes decide what it is. */
export const UPLOAD_CONTENT_TYPES = [
  'image/png',
  'image/jpeg',
  'image/webp',
  'video/mp4',
  'video/quicktime',
  'audio/mpeg',
  'audio/wav',
  'audio/mp4',
] as const;
export type UploadContentType = (typeof UPLOAD_CONTENT_TYPES)[number];

/**
 * The types of a project's events, as docs/editor.md "Events" lists them. An event's `type` stays a string on
 * the wire (types may be added; clients ignore the ones they do not know): this names the ones there are.
 */
export const PROJECT_EVENT_TYPES = [
  'turn.started',
  'assistant.delta',
  'tool.started',
  'tool.finished',
  'media.started',
  'media.progress',
  'media.completed',
  'media.failed',
  'asset.created',
  'asset.updated',
  'clip.created',
  'clip.updated',
  'clip.removed',
  'context.appended',
  'aspect_ratio.changed',
  'project.updated',
  'turn.completed',
  'turn.failed',
  'export.started',
  'export.progress',
  'export.completed',
  'export.failed',
  'project.deleted',
  'sync.reset',
] as const;
export type ProjectEventType = (typeof PROJECT_EVENT_TYPES)[number];
