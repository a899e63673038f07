import type { Static } from 'typebox';
import { AccountResponse } from '../../schemas/account.ts';
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
} from '../../schemas/jobs.ts';
import {
  McpEmptyInput,
  McpEstimateCostInput,
  McpEstimateCostOutput,
  McpGenerateInput,
  McpJobIdInput,
  McpJobWaitInput,
  McpPromptGuideOutput,
} from '../../schemas/mcp-tools.ts';
import { ModelsResponseSchema } from '../../schemas/models.ts';
import { createChecker } from '../../schemas/validate.ts';
import {
  AppError,
  ToolError,
  defineTool,
  type McpTool,
  jobLinks,
  requireScope,
  pause,
  progressReporter,
  checked,
  submitted,
  jobResult,
} from '../platform/index.ts';
import {
  MODEL_IDS,
  VIDEO_DURATIONS_SECONDS,
  imageCost,
  videoCost,
  type ModelId,
} from '../../schemas/models-catalog.ts';
import type { Clock } from '../platform/index.ts';
import type { Model } from '../../schemas/models.ts';
import type { UsersRepository } from '../accounts/index.ts';
import type { JobsService } from './jobs-service.ts';

/** What the job, catalogue and account tools use: the services and repositories their REST routes use. */
export interface JobToolDeps {
  /** The catalogue `GET /api/v1/models` answers (built once per process). */
  models: readonly Model[];
  jobs: Pick<JobsService, 'submitVideo' | 'submitImage' | 'get' | 'list' | 'cancel'>;
  users: Pick<UsersRepository, 'get'>;
  /** Whether an inbound URL is accepted: https, or the service's own media (as the routes judge it). */
  acceptsUrl(url: string): boolean;
  clock: Clock;
  /** How often `job_wait` reads its job (default 500 ms). */
  jobWaitPollMs?: number;
}

// The tools of the catalogue, jobs and the account (docs/mcp.md): each calls what its REST route calls.

const DEFAULT_JOB_WAIT_POLL_MS = 500;

/**
 * The recommended video prompt structure (docs/api.md, POST /api/v1/video/vidmodel-2/generate), with an
 * example (the `video_prompt_guide` answer).
 */
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

/** The price of an estimate: the same functions the jobs are charged with (docs/api.md, Pricing). */
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

/** The REST bodies' fields, in their request tables' order (docs/api.md): one source, the route schemas. */
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

/** list_models, estimate_cost, media_forge_generate, job_status, job_wait, job_cancel, list_jobs, get_account, video_prompt_guide. */
export function jobTools(deps: JobToolDeps): McpTool[] {
  const { jobs } = deps;
  return [
    listModelsTool(deps.models),
    estimateCostTool(),
    generateTool(jobs, deps.acceptsUrl),
    jobStatusTool(jobs),
    jobWaitTool(jobs, deps.clock, deps.jobWaitPollMs ?? DEFAULT_JOB_WAIT_POLL_MS),
    jobCancelTool(jobs),
    listJobsTool(jobs),
    accountTool(deps.users),
    promptGuideTool(),
  ];
}

/** `list_models`: the catalogue `GET /api/v1/models` answers. */
function listModelsTool(models: readonly Model[]): McpTool {
  return defineTool({
    name: 'list_models',
    title: 'List models',
    description:
      'The generation models (vidmodel-2.0, vidmodel-2.0-fast, imgmodel-2) with their accepted parameters and credit prices. Use estimate_cost for the price of one request, then media_forge_generate.',
    input: McpEmptyInput,
    output: ModelsResponseSchema,
    scope: 'models:read',
    readOnly: true,
    run: async () => ({
      structured: { models },
      text: models.map((model) => `${model.id} (${model.type}): ${model.name}`).join('; '),
    }),
  });
}

/** `estimate_cost`: a price, computed as a submit charges it (estimateCost). */
function estimateCostTool(): McpTool {
  return defineTool({
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
  });
}

/**
 * `media_forge_generate`: the tool's flat input made into the REST body of the model's route, checked by that
 * route's schema and rules, then submitted as the route submits it.
 */
function generateTool(
  jobs: Pick<JobsService, 'submitVideo' | 'submitImage'>,
  acceptsUrl: (url: string) => boolean,
): McpTool {
  const videoBody = createChecker(VideoGenerateBody, { rules: videoGenerateRules(acceptsUrl) });
  const imageBody = createChecker(ImageGenerateBody, { rules: imageGenerateRules(acceptsUrl) });
  return defineTool({
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
  });
}

/** `job_status`: `GET /api/v1/jobs/<job_id>`, once. */
function jobStatusTool(jobs: Pick<JobsService, 'get'>): McpTool {
  return defineTool({
    name: 'job_status',
    title: 'Job status',
    description:
      'Reads a generation job once: status (processing, completed, failed, cancelled), result URLs when completed, the error when failed. To wait for the end, use job_wait instead.',
    input: McpJobIdInput,
    output: JobSchema,
    readOnly: true,
    run: async (ctx, input) => jobResult(await jobs.get(ctx.principal.userId, input.job_id)),
  });
}

/**
 * `job_wait`: reads the job every `pollMs` until it ends, the time-out passes or the call is cancelled,
 * reporting the elapsed time as progress. A wait that stops leaves the job running.
 */
function jobWaitTool(jobs: Pick<JobsService, 'get'>, clock: Clock, pollMs: number): McpTool {
  return defineTool({
    name: 'job_wait',
    title: 'Wait for a job',
    description:
      'Waits until a generation job ends (completed, failed or cancelled) or timeout_seconds pass (default 300, at most 600), reporting progress, and returns the job: result.video or result.images hold the media URLs. A job still processing at the time-out can be waited for again. Videos take 1 to 5 minutes, images about 15 s.',
    input: McpJobWaitInput,
    output: JobSchema,
    readOnly: true,
    run: async (ctx, input) => {
      const started = clock.now();
      const total = input.timeout_seconds;
      const deadline = started + total * 1000;
      const progress = progressReporter(ctx);
      for (;;) {
        const job = await jobs.get(ctx.principal.userId, input.job_id);
        const elapsed = Math.min(total, (clock.now() - started) / 1000);
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
        const left = deadline - clock.now();
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
  });
}

/** `job_cancel`: `DELETE /api/v1/jobs/<job_id>`. */
function jobCancelTool(jobs: Pick<JobsService, 'cancel'>): McpTool {
  return defineTool({
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
  });
}

/** `list_jobs`: `GET /api/v1/jobs`, with each job's media as links. */
function listJobsTool(jobs: Pick<JobsService, 'list'>): McpTool {
  return defineTool({
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
  });
}

/** `get_account`: the user's id and balance, as `GET /api/v1/account` answers them. */
function accountTool(users: Pick<UsersRepository, 'get'>): McpTool {
  return defineTool({
    name: 'get_account',
    title: 'Account',
    description: "The user's id and credit balance.",
    input: McpEmptyInput,
    output: AccountResponse,
    readOnly: true,
    run: async (ctx) => {
      const user = await users.get(ctx.principal.userId);
      if (!user) throw new AppError('not_found', 'User not found');
      return {
        structured: { user_id: user.id, credits: user.credits },
        text: `User ${user.id} has ${user.credits} credits`,
      };
    },
  });
}

/** `video_prompt_guide`: VIDEO_PROMPT_GUIDE. */
function promptGuideTool(): McpTool {
  return defineTool({
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
  });
}
