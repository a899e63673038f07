import type { Static } from 'typebox';
import { AccountResponse } from '../../schemas/account.ts';
import {
  CreateProjectBody,
  ExportResponse,
  ImportAssetBody,
  InstructBody,
  InstructResponse,
  StateResponse,
  importAssetRules,
  instructRules,
} from '../../schemas/editor.ts';
import {
  CancelResponse,
  ImageGenerateBody,
  JobListQuery,
  JobListResponse,
  JobSchema,
  SubmitResponse,
  VideoGenerateBody,
  imageGenerateRules,
  videoGenerateRules,
  type JobView,
} from '../../schemas/jobs.ts';
import {
  McpAddAssetInput,
  McpAssetOutput,
  McpCreateVideoInput,
  McpEmptyInput,
  McpEstimateCostInput,
  McpEstimateCostOutput,
  McpExportInput,
  McpGenerateInput,
  McpInstructInput,
  McpJobIdInput,
  McpJobWaitInput,
  McpProjectListOutput,
  McpProjectOutput,
  McpPromptGuideOutput,
  McpStateInput,
  McpUpdateContextInput,
  McpVideoOutput,
} from '../../schemas/mcp-tools.ts';
import { ModelsResponseSchema, type Model } from '../../schemas/models.ts';
import { createChecker } from '../../schemas/validate.ts';
import { AppError } from '../domain/errors.ts';
import {
  MODEL_IDS,
  VIDEO_DURATIONS_SECONDS,
  imageCost,
  videoCost,
  type ModelId,
} from '../domain/models-catalog.ts';
import type { KeyPrincipal } from '../domain/principal.ts';
import type { Scope } from '../domain/scopes.ts';
import type { Clock } from '../ports/clock.ts';
import type { EventBus } from '../ports/event-bus.ts';
import type { ProjectEvent } from '../ports/event-history.ts';
import type { UsersRepository } from '../ports/users-repository.ts';
import type { EditorService } from '../services/editor.ts';
import type { EditorTurns } from '../services/editor-turns.ts';
import type { ExportService } from '../services/export.ts';
import type { JobsService } from '../services/jobs.ts';
import { ToolError, defineTool, type McpTool, type ToolContext, type ToolLink } from './tool.ts';

// The 17 tools of CONTRACT §10. Each calls the service its REST route calls, the same way: the same ownership
// checks (another user's job or project is the same 404, here a tool error), the same body schemas and rules
// (so the same validation messages), the same charges. The server (endpoint.ts) checks `scope` and `input`
// before `run`, and turns a thrown AppError into a tool error carrying its message and body fields.

/** What the tools use: the services and repositories the REST routes use. */
export interface McpToolDeps {
  /** The catalogue `GET /api/v1/models` answers (built once per process). */
  models: readonly Model[];
  jobs: Pick<JobsService, 'submitVideo' | 'submitImage' | 'get' | 'list' | 'cancel'>;
  users: Pick<UsersRepository, 'get'>;
  editor: Pick<
    EditorService,
    | 'owned'
    | 'videoOf'
    | 'createProject'
    | 'listProjects'
    | 'state'
    | 'createVideo'
    | 'importUrl'
    | 'patchProject'
  >;
  turns: Pick<EditorTurns, 'instruct'>;
  exports: Pick<ExportService, 'export'>;
  /** Whether an inbound URL is accepted: https, or the service's own media (`isAcceptedImageUrl`, as routes). */
  acceptsUrl(url: string): boolean;
  /**
   * The platform's event bus (project events on `project.<id>`), for the progress of instruct and export;
   * without it those report their start and end only.
   */
  events?: Pick<EventBus, 'subscribe'>;
  clock: Clock;
  /** How often `job_wait` reads its job (default 500 ms). */
  jobWaitPollMs?: number;
}

const EDITOR_READ: Scope = 'video-editor:read';
const EDITOR_WRITE: Scope = 'video-editor:write';
const DEFAULT_JOB_WAIT_POLL_MS = 500;

/** The spec §4.2 prompt structure, with an example (the `video_prompt_guide` answer). */
export const VIDEO_PROMPT_GUIDE = `# Writing a video prompt (vidmodel-2.0, vidmodel-2.0-fast)

The models follow a shot list best. Not validated, but recommended:

1. A first line: \`Total: <duration>s / <shot count> shot(s) / <aspect ratio>\` — the duration must be the
   request's \`duration_seconds\` (${VIDEO_DURATIONS_SECONDS.join(', ')}) and the ratio its \`aspect_ratio\`.
2. One line per shot: \`Shot <n>: <camera position> <camera move> <subject action>. <lens or lighting note>.\`
   Use one camera move per shot (push-in, pan left, tracking, static, crane up, ...).
3. An \`Audio:\` line listing sound effects, ambient sound and the music intent, or \`NO MUSIC\`.

## Example (duration_seconds 8, aspect_ratio 16:9)

\`\`\`
Total: 8s / 2 shots / 16:9
Shot 1: Wide shot at street level, slow push-in, a cyclist rides through a rain-soaked neon alley. 24mm lens, cyan and magenta reflections.
Shot 2: Close-up from the side, static camera, the cyclist brakes and looks up at a flickering sign. 85mm lens, shallow depth of field.
Audio: tyres hissing on wet asphalt, distant traffic, rain on metal; NO MUSIC.
\`\`\`

## Tips

- Keep the shot count small: 1 shot for 4–5 s, 2–3 shots for 8–10 s, up to 4 for 15 s.
- Describe what is seen, not what is meant; name the subject the same way in every shot.
- With \`image_url\` (image-to-video, vidmodel-2.0 only), describe the motion and the camera, not the still itself.
- Audio is generated natively (\`generate_audio\`, default true, no extra cost).
`;

/** The MIME type of a `/media/...` URL, from its extension (media ids end in the probed type's extension). */
export function mediaMimeType(url: string): string | undefined {
  const extension = /\.([a-z0-9]{1,8})(?:[?#].*)?$/i.exec(url)?.[1]?.toLowerCase();
  return extension ? MIME_TYPES[extension] : undefined;
}

const MIME_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  mp4: 'video/mp4',
  mov: 'video/quicktime',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  aac: 'audio/aac',
  m4a: 'audio/mp4',
};

/** A media link, with its MIME type when the URL tells it. */
function link(uri: string, name: string, description?: string): ToolLink {
  const mimeType = mediaMimeType(uri);
  return {
    uri,
    name,
    ...(mimeType ? { mimeType } : {}),
    ...(description ? { description } : {}),
  };
}

/** The result media of a job. */
export function jobLinks(job: Pick<JobView, 'job_id' | 'result'>): ToolLink[] {
  const result = job.result;
  if (!result) return [];
  if ('video' in result) return [link(result.video, `${job.job_id} video`, 'Generated video')];
  return result.images.map((url, index) => link(url, `${job.job_id} image ${index + 1}`, 'Generated image'));
}

/** Links to assets (`url`). */
function assetLinks(assets: readonly { id: string; kind: string; url: string }[]): ToolLink[] {
  return assets.map((asset) => link(asset.url, asset.id, `${asset.kind} asset`));
}

/** One line about a job. */
function jobText(job: JobView): string {
  const base = `Job ${job.job_id} is ${job.status} (${job.model}, ${job.credits_consumed} credits`;
  const refunded = job.refunded_credits > 0 ? `, ${job.refunded_credits} refunded` : '';
  const error = job.error ? `: ${job.error}` : '';
  const count = job.result && 'images' in job.result ? `; ${job.result.images.length} image(s)` : '';
  return `${base}${refunded})${count}${error}`;
}

/** The price of an estimate: the same functions the jobs are charged with (spec §8). */
export function estimateCost(input: Static<typeof McpEstimateCostInput>): {
  model: ModelId;
  credits: number;
} {
  if (input.model === MODEL_IDS.image) {
    const videoField = (['duration_seconds', 'resolution', 'fast', 'generate_audio'] as const).find(
      (field) => input[field] !== undefined,
    );
    if (videoField) throw new ToolError(`${videoField} applies to the video models only`);
    return { model: MODEL_IDS.image, credits: imageCost(input.num_images ?? 1) };
  }
  if (input.num_images !== undefined) throw new ToolError('num_images applies to imgmodel-2 only');
  const fast = fastOf(input.model, input.fast);
  return {
    model: fast ? MODEL_IDS.videoFast : MODEL_IDS.video,
    credits: videoCost({
      fast,
      resolution: input.resolution ?? '720p',
      durationSeconds: input.duration_seconds ?? 5,
      generateAudio: input.generate_audio ?? true,
    }),
  };
}

/** `fast` of a video request: the fast model, or `fast: true` on the standard one (as REST selects it). */
function fastOf(model: ModelId, fast: boolean | undefined): boolean {
  if (model === MODEL_IDS.videoFast) {
    if (fast === false) throw new ToolError('fast: false contradicts model vidmodel-2.0-fast');
    return true;
  }
  return fast ?? false;
}

/** The REST bodies' fields, in their order (the spec's request tables): one source, the route schemas. */
const VIDEO_FIELDS: readonly string[] = Object.keys(VideoGenerateBody.properties);
const IMAGE_FIELDS: readonly string[] = Object.keys(ImageGenerateBody.properties);
const GENERATE_FIELDS: readonly string[] = [...new Set<string>([...VIDEO_FIELDS, ...IMAGE_FIELDS])];

/** The fields of `input` that are given, in `fields`' order; a given field outside `fields` is refused. */
function restBody(
  input: Record<string, unknown>,
  fields: readonly string[],
  model: string,
): Record<string, unknown> {
  // A field of the other route is refused; unknown fields are ignored, as the routes ignore them.
  const foreign = GENERATE_FIELDS.find((field) => !fields.includes(field) && input[field] !== undefined);
  if (foreign) throw new ToolError(`${foreign} is not a field of ${model}`);
  const body: Record<string, unknown> = {};
  for (const field of fields) if (input[field] !== undefined) body[field] = input[field];
  return body;
}

/** Whether the principal holds `scope`; throws the tool error the server gives for a tool's own scope. */
function requireScope(principal: KeyPrincipal, scope: Scope): void {
  if (!principal.scopes.includes(scope)) throw new ToolError(`Missing required scope: ${scope}`);
}

/** Waits for `work`, or stops waiting when the call is cancelled (the work itself goes on, as on REST). */
async function untilCancelled<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  void work.catch(() => undefined); // a cancelled caller does not hear of its failure
  if (signal.aborted) throw new ToolError('cancelled');
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(new ToolError('cancelled'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Progress that only grows (MCP requires it): reports are chained in order, and a report not above the last
 * one is dropped.
 */
function progressReporter(ctx: ToolContext) {
  let last = -Infinity;
  let chain: Promise<void> = Promise.resolve();
  return {
    report(progress: number, total?: number, message?: string): void {
      if (!(progress > last)) return;
      last = progress;
      chain = chain.then(() => ctx.progress(progress, total, message)).catch(() => undefined);
    },
    get last() {
      return last;
    },
    settled: () => chain,
  };
}

/** Listens to a project's events while `work` runs (nothing without a bus). */
function listening<T>(
  events: McpToolDeps['events'],
  projectId: string,
  onEvent: (event: ProjectEvent) => void,
  work: () => Promise<T>,
): Promise<T> {
  const unsubscribe = events?.subscribe(`project.${projectId}`, (event) => {
    if (event && typeof event === 'object') onEvent(event as ProjectEvent);
  });
  return work().finally(() => unsubscribe?.());
}

const sameList = (a: unknown, b: readonly string[]) =>
  Array.isArray(a) && a.length === b.length && a.every((item, index) => item === b[index]);

/** A short account of an event, as a progress message. */
function eventMessage(event: ProjectEvent): string {
  const data = event.data;
  if (event.type === 'tool.started' || event.type === 'tool.finished')
    return `${event.type}: ${String(data.name)}`;
  if (event.type === 'media.progress')
    return `media ${String(data.status)} (${Math.round(Number(data.elapsed_ms) / 1000)} s)`;
  return event.type;
}

/** The tools of CONTRACT §10, bound to the services. */
export function createMcpTools(deps: McpToolDeps): McpTool[] {
  const { jobs, editor } = deps;
  const videoBody = createChecker(VideoGenerateBody, { rules: videoGenerateRules(deps.acceptsUrl) });
  const imageBody = createChecker(ImageGenerateBody, { rules: imageGenerateRules(deps.acceptsUrl) });
  const instructBody = createChecker(InstructBody, { rules: instructRules(deps.acceptsUrl) });
  const importBody = createChecker(ImportAssetBody, { rules: importAssetRules(deps.acceptsUrl) });
  const pollMs = deps.jobWaitPollMs ?? DEFAULT_JOB_WAIT_POLL_MS;

  /** A body checked as its route checks it: the route's message on failure. */
  function checked<T>(
    checker: { check(input: unknown): { ok: true; value: T } | { ok: false; message: string } },
    body: unknown,
  ): T {
    const result = checker.check(body);
    if (!result.ok) throw new ToolError(result.message);
    return result.value;
  }

  const owned = (ctx: ToolContext, projectId: string) => editor.owned(ctx.principal.userId, projectId);

  return [
    defineTool({
      name: 'list_models',
      title: 'List models',
      description:
        'The generation models (vidmodel-2.0, vidmodel-2.0-fast, imgmodel-2) with their accepted parameters and credit prices. Use estimate_cost for the price of one request, then media_forge_generate.',
      input: McpEmptyInput,
      output: ModelsResponseSchema,
      scope: 'models:read',
      readOnly: true,
      run: async () => ({
        structured: { models: deps.models },
        text: deps.models.map((model) => `${model.id} (${model.type}): ${model.name}`).join('; '),
      }),
    }),

    defineTool({
      name: 'estimate_cost',
      title: 'Estimate cost',
      description:
        'The credits a generation would be charged, priced exactly as media_forge_generate charges (nothing is charged here). Video: duration_seconds × the per-second rate of the model and resolution (a 5 s 720p vidmodel-2.0 video is 1135, vidmodel-2.0-fast 905); image: 50 per image. Compare with get_account before generating.',
      input: McpEstimateCostInput,
      output: McpEstimateCostOutput,
      scope: 'models:read',
      readOnly: true,
      run: async (_ctx, input) => {
        const estimate = estimateCost(input);
        return { structured: estimate, text: `${estimate.model}: ${estimate.credits} credits` };
      },
    }),

    defineTool({
      name: 'media_forge_generate',
      title: 'Generate a video or images',
      description:
        'Starts a generation job and returns at once (status processing) with its job_id; the credits are charged now and refunded if the job fails. Then call job_wait with the job_id to get the result URLs (video: result.video; images: result.images). model vidmodel-2.0: text-to-video, or image-to-video with image_url (needs scope video:write); vidmodel-2.0-fast: cheaper text-to-video (video:write); imgmodel-2: 1 to 4 images, or an edit of 1 to 9 image_urls (image:write). For video prompts, read video_prompt_guide first. Check the price with estimate_cost.',
      input: McpGenerateInput,
      output: SubmitResponse,
      // The scope depends on the model: checked in `run`, before anything is charged.
      readOnly: false,
      run: async (ctx, input) => {
        const fields = input as Record<string, unknown>;
        if (input.model === MODEL_IDS.image) {
          requireScope(ctx.principal, 'image:write');
          const body = checked(imageBody, restBody(fields, IMAGE_FIELDS, input.model));
          return submitted(await jobs.submitImage(ctx.principal, body));
        }
        requireScope(ctx.principal, 'video:write');
        const fast = fastOf(input.model, input.fast);
        const body = restBody({ ...fields, ...(fast ? { fast } : {}) }, VIDEO_FIELDS, input.model);
        return submitted(await jobs.submitVideo(ctx.principal, checked(videoBody, body)));
      },
    }),

    defineTool({
      name: 'job_status',
      title: 'Job status',
      description:
        'Reads a generation job once: status (processing, completed, failed, cancelled), result URLs when completed, the error when failed. To wait for the end, use job_wait instead.',
      input: McpJobIdInput,
      output: JobSchema,
      readOnly: true,
      run: async (ctx, input) => jobResult(await jobs.get(ctx.principal.userId, input.job_id)),
    }),

    defineTool({
      name: 'job_wait',
      title: 'Wait for a job',
      description:
        'Waits until a generation job ends (completed, failed or cancelled) or timeout_seconds pass (default 300, at most 600), reporting progress, and returns the job: result.video or result.images hold the media URLs. A job still processing at the time-out can be waited for again. Videos take 1 to 5 minutes, images about 15 s.',
      input: McpJobWaitInput,
      output: JobSchema,
      readOnly: true,
      run: async (ctx, input) => {
        const started = deps.clock.now();
        const total = input.timeout_seconds;
        const deadline = started + total * 1000;
        const progress = progressReporter(ctx);
        for (;;) {
          const job = await jobs.get(ctx.principal.userId, input.job_id);
          const elapsed = Math.min(total, (deps.clock.now() - started) / 1000);
          progress.report(elapsed, total, job.status);
          if (job.status !== 'processing') {
            await progress.settled();
            return jobResult(job);
          }
          if (ctx.signal.aborted) {
            await progress.settled();
            // The wait stops; the job goes on (job_cancel cancels it).
            throw new ToolError('cancelled', { job_id: job.job_id, status: job.status });
          }
          const left = deadline - deps.clock.now();
          if (left <= 0) {
            await progress.settled();
            const result = jobResult(job);
            return {
              ...result,
              text: `${result.text}; still running after ${total} s: call job_wait again`,
            };
          }
          await pause(Math.min(pollMs, left), ctx.signal);
        }
      },
    }),

    defineTool({
      name: 'job_cancel',
      title: 'Cancel a job',
      description:
        'Cancels a processing generation job; its full cost is refunded. A job already completed, failed or cancelled cannot be cancelled.',
      input: McpJobIdInput,
      output: CancelResponse,
      readOnly: false,
      run: async (ctx, input) => {
        const answer = await jobs.cancel(ctx.principal.userId, input.job_id);
        return {
          structured: answer,
          text: `Job ${answer.job_id} cancelled; ${answer.refunded_credits} credits refunded`,
        };
      },
    }),

    defineTool({
      name: 'list_jobs',
      title: 'List jobs',
      description:
        "The user's generation jobs, newest first: limit 1 to 100 (default 20), optionally one status; pass next_cursor as cursor for the next page.",
      input: JobListQuery,
      output: JobListResponse,
      readOnly: true,
      run: async (ctx, input) => {
        const page = await jobs.list(ctx.principal.userId, input);
        return {
          structured: page,
          text: `${page.jobs.length} job(s)${page.next_cursor ? ' (more: pass next_cursor as cursor)' : ''}`,
          links: page.jobs.flatMap(jobLinks),
        };
      },
    }),

    defineTool({
      name: 'get_account',
      title: 'Account',
      description: "The user's id and credit balance.",
      input: McpEmptyInput,
      output: AccountResponse,
      readOnly: true,
      run: async (ctx) => {
        const user = await deps.users.get(ctx.principal.userId);
        if (!user) throw new AppError('not_found', 'User not found');
        return {
          structured: { user_id: user.id, credits: user.credits },
          text: `User ${user.id} has ${user.credits} credits`,
        };
      },
    }),

    defineTool({
      name: 'video_prompt_guide',
      title: 'Video prompt guide',
      description:
        'How to write a video prompt the video models follow best: a Total line, one line per shot, an Audio line; with an example. Read it before media_forge_generate with a video model.',
      input: McpEmptyInput,
      output: McpPromptGuideOutput,
      readOnly: true,
      run: async () => ({
        structured: { guide: VIDEO_PROMPT_GUIDE },
        text: VIDEO_PROMPT_GUIDE,
      }),
    }),

    defineTool({
      name: 'video_editor_create_project',
      title: 'Create an editor project',
      description:
        'Creates a video-editor project (with its default video). Then drive it with video_editor_instruct: describe the video you want; the agent plans, generates media and places clips one step per call, usually ending with a question. Answer it (or say "continue") with another video_editor_instruct until the timeline is right, then video_editor_export.',
      input: CreateProjectBody,
      output: McpProjectOutput,
      scope: EDITOR_WRITE,
      readOnly: false,
      run: async (ctx, input) => {
        const answer = await editor.createProject(ctx.principal.userId, input);
        return {
          structured: answer,
          text: `Project ${answer.project.id} "${answer.project.name}" created (${answer.project.aspect_ratio}); next: video_editor_instruct`,
        };
      },
    }),

    defineTool({
      name: 'video_editor_list_projects',
      title: 'List editor projects',
      description: "The user's video-editor projects (id, name, aspect ratio, last change).",
      input: McpEmptyInput,
      output: McpProjectListOutput,
      scope: EDITOR_READ,
      readOnly: true,
      run: async (ctx) => {
        const answer = await editor.listProjects(ctx.principal.userId);
        return { structured: answer, text: `${answer.projects.length} project(s)` };
      },
    }),

    defineTool({
      name: 'video_editor_get_state',
      title: 'Editor project state',
      description:
        "A project's state: the project (context included), its videos, its asset library (media URLs) and the clips of its timeline (video_id narrows the clips to one video).",
      input: McpStateInput,
      output: StateResponse,
      scope: EDITOR_READ,
      readOnly: true,
      run: async (ctx, input) => {
        const answer = await editor.state(ctx.principal.userId, input.project_id, input.video_id);
        return {
          structured: answer,
          text: `Project ${answer.project.id} "${answer.project.name}": ${answer.videos.length} video(s), ${answer.assets.length} asset(s), ${answer.clips.length} clip(s)`,
          links: assetLinks(answer.assets),
        };
      },
    }),

    defineTool({
      name: 'video_editor_instruct',
      title: 'Instruct the editor agent',
      description:
        'One step of the editor agent (5 credits, plus the price of any media it generates: at most one generation per step). Give an instruction (and/or up to 10 reference image_urls); the agent edits the timeline and answers in assistant_text, usually with a question: reply with the answer, or "continue", in the next call, until the timeline is right; then video_editor_export. A step takes 5 s to 5 min (progress is reported); it finishes even if this call is cancelled.',
      input: McpInstructInput,
      output: InstructResponse,
      scope: EDITOR_WRITE,
      readOnly: false,
      run: async (ctx, input) => {
        // The route's order: the project and `video_id` (404), then the body's rules (400), then the turn.
        const project = await owned(ctx, input.project_id);
        if (input.video_id !== undefined) editor.videoOf(project, input.video_id);
        const { project_id: _projectId, ...rest } = input;
        const body = checked(instructBody, rest);
        const video = editor.videoOf(project, body.video_id);
        const progress = progressReporter(ctx);
        progress.report(0, undefined, 'turn requested');
        let turnId: string | undefined;
        let count = 0;
        const answer = await listening(
          deps.events,
          project.id,
          (event) => {
            if (turnId === undefined) {
              const mine =
                event.type === 'turn.started' &&
                event.video_id === video.id &&
                event.data.instruction === (body.instruction ?? '') &&
                sameList(event.data.image_urls, body.image_urls);
              if (!mine || !event.turn_id) return;
              turnId = event.turn_id;
            }
            if (event.turn_id !== turnId) return;
            count += 1;
            progress.report(count, undefined, eventMessage(event));
          },
          () => untilCancelled(deps.turns.instruct(ctx.principal, project, body), ctx.signal),
        );
        const done = Math.max(count + 1, progress.last + 1);
        progress.report(done, done, 'turn completed');
        await progress.settled();
        const made = [
          answer.assets_created.length > 0 ? `${answer.assets_created.length} asset(s)` : '',
          answer.clips_created.length > 0 ? `${answer.clips_created.length} clip(s)` : '',
        ].filter(Boolean);
        return {
          structured: answer,
          text: `${answer.assistant_text}\n\n(${made.length > 0 ? `created ${made.join(' and ')}` : 'nothing created'}; reply with video_editor_instruct, or export with video_editor_export)`,
          links: assetLinks(answer.assets_created),
        };
      },
    }),

    defineTool({
      name: 'video_editor_export',
      title: 'Export a video',
      description:
        "Renders a project's video (its video, voice, sfx and music tracks) into one mp4 and returns its permanent video_url. Takes 30 s to 3 min (progress is reported); an unchanged timeline answers its earlier export at once. fit: 'fit' letterboxes mismatched clips (default), 'fill' crops them.",
      input: McpExportInput,
      output: ExportResponse,
      scope: EDITOR_WRITE,
      readOnly: false,
      run: async (ctx, input) => {
        const project = await owned(ctx, input.project_id);
        const video = editor.videoOf(project, input.video_id);
        const body = {
          ...(input.video_id !== undefined ? { video_id: input.video_id } : {}),
          ...(input.fit !== undefined ? { fit: input.fit } : {}),
        };
        const progress = progressReporter(ctx);
        progress.report(0, 1, 'export requested');
        let exportId: string | undefined;
        const answer = await listening(
          deps.events,
          project.id,
          (event) => {
            if (event.video_id !== video.id || event.turn_id !== null) return;
            if (exportId === undefined && event.type === 'export.started')
              exportId = String(event.data.export_id);
            if (exportId === undefined || event.data.export_id !== exportId) return;
            if (event.type === 'export.progress') {
              const fraction = Number(event.data.fraction);
              if (Number.isFinite(fraction) && fraction < 1) progress.report(fraction, 1, 'encoding');
            }
          },
          () => untilCancelled(deps.exports.export(ctx.principal.userId, project, video, body), ctx.signal),
        );
        progress.report(1, 1, 'export completed');
        await progress.settled();
        return {
          structured: { ...answer },
          text: `Exported ${answer.duration_sec} s (${answer.video_clip_count} video clip(s), ${answer.audio_overlay_count} audio overlay(s)): ${answer.video_url}`,
          links: [link(answer.video_url, `${answer.asset_id}.mp4`, 'Exported video')],
        };
      },
    }),

    defineTool({
      name: 'video_editor_create_video',
      title: 'Add a video to a project',
      description:
        'Adds a video (its own timeline and chat thread) to a project; name defaults to "Video <n>", aspect_ratio to the project\'s. Target it with video_id in video_editor_instruct and video_editor_export.',
      input: McpCreateVideoInput,
      output: McpVideoOutput,
      scope: EDITOR_WRITE,
      readOnly: false,
      run: async (ctx, input) => {
        const project = await owned(ctx, input.project_id);
        const { project_id: _projectId, ...body } = input;
        const answer = await editor.createVideo(project, body, {});
        return {
          structured: answer,
          text: `Video ${answer.video.id} "${answer.video.name}" (${answer.video.aspect_ratio}) added to ${project.id}`,
        };
      },
    }),

    defineTool({
      name: 'video_editor_add_asset',
      title: 'Import media into a project',
      description:
        "Imports an image, video or audio file by URL (https, or a /media URL of this service, e.g. a job's result) into a project's library, so the agent can place it: mention its id in video_editor_instruct.",
      input: McpAddAssetInput,
      output: McpAssetOutput,
      scope: EDITOR_WRITE,
      readOnly: false,
      run: async (ctx, input) => {
        const project = await owned(ctx, input.project_id);
        const { project_id: _projectId, ...rest } = input;
        const body = checked(importBody, rest);
        const answer = await editor.importUrl(project, body.url, body.name);
        return {
          structured: answer,
          text: `Asset ${answer.asset.id} (${answer.asset.kind}) added to ${project.id}`,
          links: assetLinks([answer.asset]),
        };
      },
    }),

    defineTool({
      name: 'video_editor_update_context',
      title: "Rewrite a project's context",
      description:
        "Replaces a project's context_md (up to 100 000 characters of Markdown): the brief the agent reads on every step (audience, style, characters, constraints). Read the current one with video_editor_get_state.",
      input: McpUpdateContextInput,
      output: McpProjectOutput,
      scope: EDITOR_WRITE,
      readOnly: false,
      run: async (ctx, input) => {
        const project = await owned(ctx, input.project_id);
        const answer = await editor.patchProject(project, { context_md: input.context_md }, {});
        return {
          structured: answer,
          text: `Context of ${answer.project.id} updated (${answer.project.context_md.length} characters, revision ${answer.project.revision})`,
        };
      },
    }),
  ];
}

/** A submit's 202 body as a tool result. */
function submitted(answer: Static<typeof SubmitResponse>) {
  return {
    structured: answer,
    text: `Job ${answer.job_id} is processing on ${answer.model} (${answer.credits_consumed} credits charged, ${answer.credits_remaining} left); call job_wait with this job_id`,
  };
}

/** A job as a tool result: the job, a line, its media. */
function jobResult(job: JobView) {
  return { structured: job, text: jobText(job), links: jobLinks(job) };
}
