import type { Logger } from 'pino';
import type { AgentToolArgs } from '../../../schemas/agent-tools.ts';
import { AppError } from '../../platform/index.ts';
import { nearestAspectRatio } from '../../../schemas/editor-terms.ts';
import { IMAGE_ASPECT_RATIOS, VIDEO_ASPECT_RATIOS } from '../../../schemas/models-catalog.ts';
import type { AssetRecord } from '../../../actors/index.ts';
import type { JobsService, SubmitAnswer } from '../../jobs/index.ts';
import type { ToolOutcome } from '../agents/agent-model.ts';
import type { GeneratedAssets } from '../generated-assets.ts';
import { createJobWaits, type JobWaitDeps, type JobWaits } from './turn-job-wait.ts';
import { TurnAborted, type TurnSession } from './turn-session.ts';

/**
 * A turn's media generation (docs/editor.md, Agent turns; docs/api.md, Refunds): an ordinary job of the
 * instructing key, charged before the provider call and refunded when nothing is delivered. The turn waits
 * for the job, announcing `media.*` events, and the delivered file becomes an asset. A price that does not
 * fit ends the turn (402); any other failure is the tool's error, which the agent reports.
 */
export interface TurnMedia {
  /**
   * `generate_image`: one image from the prompt and the `references` (by URL), in the image aspect ratio
   * nearest the one asked for, else the video's (`videoRatio`).
   */
  image(
    session: TurnSession,
    args: AgentToolArgs<'generate_image'>,
    videoRatio: string,
    references: AssetRecord[],
    urlOf: (asset: AssetRecord) => string,
  ): Promise<ToolOutcome>;
  /**
   * `generate_video`: a video from the prompt, or from the start `image` (by URL), in the video aspect ratio
   * nearest the video's (`videoRatio`); 5 s, 720p, with audio unless asked otherwise.
   */
  video(
    session: TurnSession,
    args: AgentToolArgs<'generate_video'>,
    videoRatio: string,
    image: AssetRecord | undefined,
    urlOf: (asset: AssetRecord) => string,
  ): Promise<ToolOutcome>;
}

/** What a turn's media generation submits its job to, waits on, and adds the delivered media with. */
export interface TurnMediaDeps extends JobWaitDeps {
  jobsService: Pick<JobsService, 'submitVideo' | 'submitImage'>;
  generated: Pick<GeneratedAssets, 'add'>;
  logger: Logger;
}

/** The turns' media generations in this process; the wait for a job is turn-job-wait.ts. */
export function createTurnMedia(deps: TurnMediaDeps): TurnMedia {
  const waits = createJobWaits(deps);
  return {
    image(session, args, videoRatio, references, urlOf) {
      return generate(deps, waits, session, 'image', () =>
        deps.jobsService.submitImage(
          session.principal,
          {
            prompt: args.prompt,
            image_urls: references.map(urlOf),
            num_images: 1,
            aspect_ratio: nearestAspectRatio(
              args.aspect_ratio ?? videoRatio,
              IMAGE_ASPECT_RATIOS,
            ) as (typeof IMAGE_ASPECT_RATIOS)[number],
          },
          { origin: originOf(session) },
        ),
      );
    },
    video(session, args, videoRatio, image, urlOf) {
      return generate(deps, waits, session, 'video', () =>
        deps.jobsService.submitVideo(
          session.principal,
          {
            prompt: args.prompt,
            fast: args.fast ?? false,
            duration_seconds: args.duration_seconds ?? 5,
            aspect_ratio: nearestAspectRatio(
              videoRatio,
              VIDEO_ASPECT_RATIOS,
            ) as (typeof VIDEO_ASPECT_RATIOS)[number],
            resolution: args.resolution ?? '720p',
            generate_audio: args.generate_audio ?? true,
            ...(image ? { image_url: urlOf(image) } : {}),
          },
          { origin: originOf(session) },
        ),
      );
    },
  };
}

/**
 * One generation from submit to asset: the job submitted (`media.started`), waited for, and its media added
 * to the project under the turn (`media.completed`), or the tool's error (`media.failed` when the job failed).
 */
async function generate(
  deps: Pick<TurnMediaDeps, 'generated'>,
  waits: JobWaits,
  session: TurnSession,
  kind: 'image' | 'video',
  submit: () => Promise<SubmitAnswer>,
): Promise<ToolOutcome> {
  let answer: SubmitAnswer;
  try {
    answer = await submitted(submit);
  } catch (error) {
    if (error instanceof AppError) return { ok: false, error: `generation refused: ${error.message}` };
    throw error;
  }
  const jobId = answer.job_id;
  await session.emit({
    type: 'media.started',
    video_id: session.videoId,
    data: { job_id: jobId, kind, model: answer.model, credits: answer.credits_consumed },
  });
  const job = await waits.waitFor(session, jobId);
  if (job.status !== 'completed') {
    const error = job.error ?? `the job was ${job.status}`;
    session.note({
      type: 'media.failed',
      video_id: session.videoId,
      data: { job_id: jobId, error, refunded_credits: job.refunded_credits },
    });
    return { ok: false, error: `generation failed: ${error}` };
  }
  const added = await session.run(
    async (before) =>
      (await deps.generated.add(job, session.turnId, before)) ?? { asset: undefined, events: [] },
  );
  const asset = added.asset;
  if (!asset) return { ok: false, error: 'generation delivered nothing usable' };
  session.note({
    type: 'media.completed',
    video_id: session.videoId,
    data: { job_id: jobId, asset_id: asset.id },
  });
  return {
    ok: true,
    result: { asset, job_id: jobId, credits: job.credits },
    summary: `${kind} ${asset.id} generated (${job.credits} credits)`,
  };
}

/** The job's answer; a price that does not fit ends the whole turn (402), not just the tool. */
async function submitted(submit: () => Promise<SubmitAnswer>): Promise<SubmitAnswer> {
  try {
    return await submit();
  } catch (error) {
    if (error instanceof AppError && error.code === 'insufficient_credits') throw new TurnAborted(error);
    throw error;
  }
}

const originOf = (session: TurnSession) => ({
  project_id: session.projectId,
  video_id: session.videoId,
  turn_id: session.turnId,
});
