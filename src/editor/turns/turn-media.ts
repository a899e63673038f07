import type { Logger } from 'pino';
import type { AgentToolArgs } from '../../../schemas/agent-tools.ts';
import { AppError, type DomainEvents } from '../../platform/index.ts';
import { nearestAspectRatio } from '../../../schemas/editor-terms.ts';
import { IMAGE_ASPECT_RATIOS, VIDEO_ASPECT_RATIOS } from '../../../schemas/models-catalog.ts';
import type { AssetRecord } from '../../../actors/index.ts';
import type { JobEvents, JobRecord, JobsRepository, JobsService, SubmitAnswer } from '../../jobs/index.ts';
import type { ToolOutcome } from '../agents/agent-model.ts';
import type { GeneratedAssets } from '../generated-assets.ts';
import { TurnAborted, TurnLost, type TurnSession } from './turn-session.ts';

export interface TurnMediaDeps {
  jobsService: Pick<JobsService, 'submitVideo' | 'submitImage'>;
  jobs: Pick<JobsRepository, 'get'>;
  /** The jobs' announcements: a waiting turn hears its job end here. */
  jobEvents: Pick<DomainEvents<JobEvents>, 'subscribe'>;
  generated: Pick<GeneratedAssets, 'add'>;
  /**
   * Cluster mode: how often a waiting turn reads its job again. Its job is polled by whichever node pulls it
   * from `MF_JOBS`, and `job.finished` is told only in the process that ended the job, so a job ended on
   * another node reaches the turn through this read. Unset (single node): every job ends in this process.
   */
  recheckMs?: number;
  /** How often a turn waiting for its job announces `media.progress`. */
  progressIntervalMs: number;
  logger: Logger;
}

const ENDED = new Set(['completed', 'failed', 'cancelled']);

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

  /** Turns waiting in this process, by the job they wait for. */
  const waiting = new Map<string, Set<Listener>>();
  deps.jobEvents.subscribe('job.finished', (job) => {
    for (const listener of waiting.get(job.id) ?? []) listener.hear(job);
  });

  /** Listens for the job's `job.finished` in this process from now on, until `stop`. */
  function listen(jobId: string): Listener & { stop(): void } {
    const listener: Listener = {
      heard: undefined,
      wake: () => undefined,
      hear(job) {
        listener.heard = job;
        listener.wake();
      },
    };
    let set = waiting.get(jobId);
    if (!set) waiting.set(jobId, (set = new Set()));
    set.add(listener);
    return Object.assign(listener, {
      stop() {
        set.delete(listener);
        if (set.size === 0 && waiting.get(jobId) === set) waiting.delete(jobId);
      },
    });
  }

  /**
   * Waits for the job to end, announcing progress; the job itself is bounded by PROVIDER_TIMEOUT_MS. Listens
   * first, then reads the job once (it may have ended before the turn listened); from then on its end is
   * heard as `job.finished`, or read every `recheckMs` when another node may end it.
   */
  async function waitForJob(session: TurnSession, jobId: string): Promise<JobRecord> {
    const listener = listen(jobId);
    try {
      const started = Date.now();
      let nextProgress = started + deps.progressIntervalMs;
      let nextRecheck = deps.recheckMs === undefined ? Infinity : started + deps.recheckMs;
      let job = await deps.jobs.get(jobId);
      for (;;) {
        job = listener.heard ?? job;
        // The job goes on without the turn (its media still join the project when delivered).
        if (session.isLost || session.signal.aborted) throw new TurnLost();
        if (job && ENDED.has(job.status)) return job;
        if (Date.now() >= nextProgress) {
          nextProgress = Date.now() + deps.progressIntervalMs;
          await session.emit({
            type: 'media.progress',
            video_id: session.videoId,
            data: { job_id: jobId, status: 'processing', elapsed_ms: Date.now() - started },
          });
        } else if (Date.now() >= nextRecheck) {
          nextRecheck = Date.now() + deps.recheckMs!;
          job = await deps.jobs.get(jobId);
        } else {
          await sleepUntil(Math.min(nextProgress, nextRecheck), session.signal, listener);
        }
      }
    } finally {
      listener.stop();
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

/** A waiting turn's ear for its job's `job.finished`. */
interface Listener {
  heard: JobRecord | undefined;
  /** Ends the wait in progress, if any. */
  wake(): void;
  hear(job: JobRecord): void;
}

/** Resolves at `at`, when the turn is aborted, or when the listener hears its job end, whichever is first. */
function sleepUntil(at: number, signal: AbortSignal, listener: Listener): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      listener.wake = () => undefined;
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, at - Date.now()));
    signal.addEventListener('abort', done, { once: true });
    listener.wake = done;
    if (signal.aborted || listener.heard) done();
  });
}

const originOf = (session: TurnSession) => ({
  project_id: session.projectId,
  video_id: session.videoId,
  turn_id: session.turnId,
});
