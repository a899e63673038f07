// The dashboard's one door to the server's shapes: every answer it reads and every body it sends is typed from
// the TypeBox schemas in schemas/ (the ones the routes declare), and the plain values it shows (scopes, tracks,
// ratios, limits) come from schemas/vocabulary.ts, the clip fields' words and bounds from
// schemas/timeline-terms.ts and which field applies to which clip from schemas/clip-applies.ts — all pure and
// safe in a browser. No other web/ file imports from outside web/; test/unit/web-boundary.test.ts keeps it so.
import type { Static } from 'typebox';
import type {
  CreateKeyInput,
  CreatedKeyResponse,
  CreditBalanceResponse,
  DeliveriesResponse,
  KeySchema,
  KeysResponse,
  LedgerEntrySchema,
  LedgerResponse,
  TestDeliveryResponse,
  WebhookBody,
  WebhookDeliverySchema,
  WebhookResponse,
  WebhookSetResponse,
} from '../../schemas/admin.ts';
import type { DashboardSessionResponse, DashboardTokenResponse } from '../../schemas/dashboard.ts';
import type {
  AssetSchema,
  ClipSchema,
  EventSchema,
  ExportRequest,
  InstructRequestBody,
  MessageSchema,
  MessagesResponse,
  ProjectListResponse,
  ProjectResponse,
  ProjectSchema,
  ProjectSummarySchema,
  StateResponse,
  VideoResponse,
  VideoSchema,
} from '../../schemas/editor.ts';
import type { JobListResponse, JobView } from '../../schemas/jobs.ts';

export {
  CLIP_VOLUME_MAX,
  DEFAULT_ASPECT_RATIO,
  DEFAULT_PROJECT_NAME,
  DEFAULT_SCOPE,
  INSTRUCTION_MAX,
  JOB_STATUSES,
  KEY_NAME_MAX,
  PROJECT_ASPECT_RATIOS,
  PROJECT_NAME_MAX,
  SCOPES,
  TEST_DELIVERY_PREFIX,
  TRACKS,
  TURN_CREDITS,
  UPLOAD_CONTENT_TYPES,
  trackAccepts,
} from '../../schemas/vocabulary.ts';
export {
  DECLICK_SEC,
  EXPORT_QUALITIES,
  FADE_MAX_SEC,
  LOUDNESS_SILENCE_LUFS,
  LOUDNESS_TARGET_LUFS,
  MOTION_PAN,
  MOTION_ZOOM,
  MOTIONS,
  SPEED_MAX,
  SPEED_MIN,
  TEXT_BACKGROUNDS,
  TEXT_COLOR_DEFAULT,
  TEXT_DURATION_DEFAULT_SEC,
  TEXT_DURATION_MAX_SEC,
  TEXT_DURATION_MIN_SEC,
  TEXT_FADE_DEFAULT_SEC,
  TEXT_MAX_CHARS,
  TEXT_POSITIONS,
  TEXT_STYLE_DEFAULTS,
  TEXT_STYLES,
  TRANSITION_DEFAULT_SEC,
  TRANSITION_MAX_SEC,
  TRANSITION_MIN_SEC,
  TRANSITION_TYPES,
} from '../../schemas/timeline-terms.ts';
export type {
  ExportQuality,
  Motion,
  TextBackground,
  TextPosition,
  TextStyle,
  TransitionIn,
  TransitionType,
} from '../../schemas/timeline-terms.ts';
export { LOOK_FIELDS, clipKind, fieldApplies } from '../../schemas/clip-applies.ts';
export { layoutText } from '../../schemas/text-layout.ts';
export type { TextLayout, TextRequest } from '../../schemas/text-layout.ts';
export { timelinePlacements } from '../../schemas/vocabulary.ts';
export type { ClipSource } from '../../schemas/vocabulary.ts';
export type { ApplicableField, ClipKind } from '../../schemas/clip-applies.ts';
export type {
  AddClipRequest,
  CreateProjectRequest,
  ExportRequest,
  ImportAssetRequest,
  PatchClipRequest,
} from '../../schemas/editor.ts';
export type {
  ProjectAspectRatio,
  ProjectEventType,
  PublicJobStatus as JobStatus,
  Scope,
  Track,
  UploadContentType,
} from '../../schemas/vocabulary.ts';

/** A body as the dashboard sends it: the fields `K` the server fills with their default may be left out. */
type Sent<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

// The session API (`/api/dashboard/v1`).
export type Session = Static<typeof DashboardSessionResponse>;
export type SessionToken = Static<typeof DashboardTokenResponse>;
export type ApiKey = Static<typeof KeySchema>;
export type KeyList = Static<typeof KeysResponse>;
export type CreateKeyRequest = Sent<CreateKeyInput, 'name'>;
export type CreatedKey = Static<typeof CreatedKeyResponse>;
export type Webhook = Static<typeof WebhookResponse>;
export type SetWebhookRequest = Static<typeof WebhookBody>;
export type WebhookSet = Static<typeof WebhookSetResponse>;
export type Delivery = Static<typeof WebhookDeliverySchema>;
export type DeliveryList = Static<typeof DeliveriesResponse>;
export type TestDelivery = Static<typeof TestDeliveryResponse>;
export type Balance = Static<typeof CreditBalanceResponse>;
export type LedgerEntry = Static<typeof LedgerEntrySchema>;
export type Ledger = Static<typeof LedgerResponse>;

// Jobs (`/api/v1/jobs`).
export type Job = JobView;
export type JobList = Static<typeof JobListResponse>;

// The editor (`/api/v1/media-studio`).
export type ProjectSummary = Static<typeof ProjectSummarySchema>;
export type ProjectList = Static<typeof ProjectListResponse>;
export type Project = Static<typeof ProjectSchema>;
export type ProjectCreated = Static<typeof ProjectResponse>;
export type Video = Static<typeof VideoSchema>;
export type VideoCreated = Static<typeof VideoResponse>;
export type Asset = Static<typeof AssetSchema>;
export type Clip = Static<typeof ClipSchema>;
export type ProjectState = Static<typeof StateResponse>;
export type Message = Static<typeof MessageSchema>;
export type MessagePage = Static<typeof MessagesResponse>;
export type InstructRequest = Sent<InstructRequestBody, 'image_urls'>;
export type ExportFit = NonNullable<ExportRequest['fit']>;
/** One event of a project (docs/editor.md "Events"); `type` is a string: types may be added. */
export type ProjectEvent = Static<typeof EventSchema>;
