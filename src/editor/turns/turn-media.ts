import type { Logger } from 'pino';
import type { AgentToolArgs } from '../../../schemas/agent-tools.ts';
import { AppError } from '../../platform/index.ts';
import { nearestAspectRatio } from '../../../schemas/editor-terms.ts';
import { IMAGE_ASPECT_RATIOS, VIDEO_ASPECT_RATIOS } from '../../../schemas/models-catalog.ts';
import type { AssetRecord } from '../../../actors/index.ts';
import type { JobRecord, JobsRepository, JobsService, SubmitAnswer } from '../../jobs/index.ts';
import type { ToolOutcome } from '../agents/agent-model.ts';
import type { GeneratedAssets } from '../generated-assets.ts';
import { TurnAborted, TurnLost, type TurnSession } from './turn-session.ts';

export interface TurnMediaDeps {
  jobsService: Pick<JobsService, 'submitVideo' | 'submitImage'>;
  jobs: Pick<JobsRepository, 'get'>;
  generated: GeneratedAssets;
  /** How often the turn looks at its job, and how often it announces `media.progress`. */
  pollIntervalMs: number;
  progressIntervalMs: number;
  logger: Logger;
}

const ENDED = new Set(['completed', 'failed', 'cancelled']);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A turn's media generation (docs/editor.md, Agent turns; docs/api.md, Refunds): an ordinary job of the
 * instructing key, charged before the provider call and refunded when nothing is delivered. The turn waits
 * for the job, announcing `media.*` events, and the delivered file becomes an asset. A price that does not
 * fit ends the turn (402); any other failure is the tool's error, which the agent reports.
 */
export function createTurnMedia(deps: TurnMediaDeps) {
  async function submitted(session: TurnSession, submit: () => Promise<SubmitAnswer>) {
    try {
      return await submit();
    } catch (error) {
      if (error instanceof AppError && error.code === 'insufficient_credits') throw new TurnAborted(error);
      throw error;
    }
  }

  /** Waits for the job to end, announcing progress; the job itself is bounded by PROVIDER_TIMEOUT_MS. */
  async function waitForJob(session: TurnSession, jobId: string): Promise<JobRecord> {
    const started = Date.now();
    let announced = started;
    for (;;) {
      // The job goes on without the turn (its media still join the project when delivered).
      if (session.isLost) throw new TurnLost();
      const job = await deps.jobs.get(jobId);
      if (job && ENDED.has(job.status)) return job;
      if (Date.now() - announced >= deps.progressIntervalMs) {
        announced = Date.now();
        await session.emit({
          type: 'media.progress',
          video_id: session.videoId,
          data: { job_id: jobId, status: 'processing', elapsed_ms: announced - started },
        });
      }
      await sleep(deps.pollIntervalMs);
    }
  }

  async function generate(
    session: TurnSession,
    kind: 'image' | 'video',
    submit: () => Promise<SubmitAnswer>,
  ): Promise<ToolOutcome> {
    let answer: SubmitAnswer;
    try {
      answer = await submitted(session, submit);
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
    const job = await waitForJob(session, jobId);
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

  return {
    image(
      session: TurnSession,
      args: AgentToolArgs<'generate_image'>,
      videoRatio: string,
      references: AssetRecord[],
      urlOf: (asset: AssetRecord) => string,
    ) {
      return generate(session, 'image', () =>
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
    video(
      session: TurnSession,
      args: AgentToolArgs<'generate_video'>,
      videoRatio: string,
      image: AssetRecord | undefined,
      urlOf: (asset: AssetRecord) => string,
    ) {
      return generate(session, 'video', () =>
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

export type TurnMedia = ReturnType<typeof createTurnMedia>;

const originOf = (session: TurnSession) => ({
  project_id: session.projectId,
  video_id: session.videoId,
  turn_id: session.turnId,
});
