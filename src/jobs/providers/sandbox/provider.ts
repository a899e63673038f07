import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Db } from 'mongodb';
import type { Logger } from 'pino';
import { type Clock, newId, newMediaId, type MediaStore } from '../../../platform/index.ts';
import type { ProviderEndpoints } from '../../../../schemas/models-catalog.ts';
import {
  ProviderRejection,
  type Generation,
  type MediaProvider,
  type ProviderHandle,
  type ProviderStatus,
} from '../../ports/media-provider.ts';
import { imageDimensions, videoDimensions } from './dimensions.ts';
import { sandboxBehaviour, type SandboxBehaviour } from './markers.ts';
import { RenderError, type SandboxRenderer } from './render.ts';
import { createRenderClaims, type RenderClaims, type SandboxRequestDoc } from './requests.ts';

export interface SandboxProviderOptions {
  db: Db;
  store: MediaStore;
  renderer: SandboxRenderer;
  endpoints: ProviderEndpoints;
  clock: Clock;
  logger: Logger;
  videoMs: number;
  imageMs: number;
  /** How long a render claim lasts without renewal (renewed every third of it while rendering). */
  leaseMs?: number;
}

/** The offline provider: a {@link MediaProvider} that renders with ffmpeg. */
export interface SandboxProvider extends MediaProvider {
  /** Stops this process's renders and hands their requests back for another process to render. */
  close(): Promise<void>;
}

const ENDPOINT_BY_CAPABILITY = {
  'text-to-video': 'textToVideo',
  'image-to-video': 'imageToVideo',
  'fast-text-to-video': 'fastTextToVideo',
  'text-to-image': 'textToImage',
  'image-edit': 'imageEdit',
} as const;

/**
 * The offline provider (docs/operator.md, Providers). It behaves like an external one: requests live in
 * `sandbox_requests` (a service restart does not forget them), media is really rendered with ffmpeg (queued
 * behind `SANDBOX_RENDER_CONCURRENCY`), and prompt markers script failures. Rendering starts at submit on the
 * node that took the request; if that process dies, the claim lapses and the next status call renders it.
 */
export async function createSandboxProvider(options: SandboxProviderOptions): Promise<SandboxProvider> {
  const { db, store, renderer, clock, logger } = options;
  const requests = db.collection<SandboxRequestDoc>('sandbox_requests');
  await requests.createIndexes([{ key: { created_at: 1 }, name: 'by_age' }]);
  /** This process's renders, by request id: a cancel stops its own render at once (queued or running). */
  const rendering = new Map<string, AbortController>();
  const claims = createRenderClaims({
    requests,
    clock,
    logger,
    leaseMs: options.leaseMs ?? 15_000,
    rendering: () => rendering.size > 0,
  });
  let closed = false;

  /** Renders a claimed request in the background; the claims' renewal keeps it until the files are stored. */
  function render(request: SandboxRequestDoc): void {
    if (closed || rendering.has(request._id)) return;
    const controller = new AbortController();
    rendering.set(request._id, controller);
    const { signal } = controller;
    void (async () => {
      let files: string[] = [];
      try {
        files = await renderGeneration(renderer, request.generation, (id) => mediaBytes(store, id), signal);
        const outputs = await storeOutputs(store, files, contentTypeOf(request.generation));
        await requests.updateOne(
          { _id: request._id, state: 'pending' },
          { $set: { state: 'rendered', outputs, render_owner: null, render_lease_until: null } },
        );
      } catch (error) {
        if (closed) return; // shutting down: close() releases the claim and another process renders it
        if (signal.aborted) return; // cancelled: the request says so already
        logger.error({ err: error, sandbox_request: request._id }, 'sandbox render failed');
        await requests
          .updateOne(
            { _id: request._id, state: 'pending' },
            { $set: { state: 'render_failed', error: renderFailure(error) } },
          )
          .catch(() => undefined);
      } finally {
        rendering.delete(request._id);
        await Promise.all(files.map((file) => rm(file, { force: true })));
      }
    })();
  }

  async function load(handle: ProviderHandle): Promise<SandboxRequestDoc> {
    const request = await requests.findOne({ _id: handle.requestId });
    if (!request) throw new Error(`sandbox request ${handle.requestId} not found`);
    return request;
  }

  async function status(handle: ProviderHandle): Promise<ProviderStatus> {
    const request = await load(handle);
    const { behaviour } = request;
    if (request.state === 'cancelled') return { state: 'failed', error: 'The request was cancelled' };
    if (behaviour.kind === 'hang') return { state: 'running' };
    if (clock.now() < request.ready_at.getTime()) {
      if (request.state === 'pending' && behaviour.kind === 'normal' && (await claims.claim(request)))
        render(request);
      return { state: 'running' };
    }
    if (behaviour.kind === 'fail')
      return { state: 'failed', error: 'The sandbox model failed to generate this request' };
    if (behaviour.kind === 'empty') return { state: 'completed' };
    if (request.state === 'render_failed')
      return { state: 'failed', error: request.error ?? 'Render failed' };
    if (request.state === 'rendered') return { state: 'completed' };
    if (await claims.claim(request)) render(request); // the process that was rendering it is gone
    return { state: 'running' };
  }

  return {
    label: 'sandbox',
    async submit(generation) {
      const behaviour = sandboxBehaviour(generation.prompt);
      if (behaviour.kind === 'fail-submit') {
        throw new ProviderRejection('the sandbox refused the request ([sandbox:fail-submit])', 422);
      }
      const request = newRequest(generation, behaviour, options, claims, clock.now());
      await requests.insertOne(request);
      if (behaviour.kind === 'normal') render(request);
      return { endpoint: request.endpoint, requestId: request._id };
    },
    status,
    async result(handle) {
      const request = await load(handle);
      if (request.behaviour.kind === 'empty') return { ok: true, outputs: [] };
      if (request.state !== 'rendered')
        return { ok: false, error: request.error ?? 'The request is not finished' };
      return {
        ok: true,
        outputs: request.outputs.map((output) => ({
          contentType: output.content_type,
          open: () => store.open(output.media_id),
        })),
      };
    },
    async cancel(handle) {
      const cancelled = await requests.updateOne(
        { _id: handle.requestId, state: 'pending' },
        { $set: { state: 'cancelled' } },
      );
      // Like a real provider, stop working on it: a render left to run would hold a slot other requests wait
      // for, and store media nobody reads. (Another process's render of it runs on, and its result is ignored.)
      rendering.get(handle.requestId)?.abort();
      return cancelled.modifiedCount === 1;
    },
    async close() {
      closed = true;
      claims.stopRenewing();
      await renderer.close();
      // Hand our unfinished renders back at once, so the next process need not wait for their leases to lapse.
      await claims.releaseAll();
    },
  };
}

/**
 * A submitted request, pending until its emulated processing time is over (a marker's delay, else the
 * configured time of a video or image request). A normal one is claimed at once by this process, which starts
 * rendering it.
 */
function newRequest(
  generation: Generation,
  behaviour: SandboxBehaviour,
  options: Pick<SandboxProviderOptions, 'endpoints' | 'videoMs' | 'imageMs'>,
  claims: RenderClaims,
  now: number,
): SandboxRequestDoc {
  const isVideo = 'duration_seconds' in generation;
  const processingMs =
    behaviour.kind === 'normal' && behaviour.delayMs !== undefined
      ? behaviour.delayMs
      : isVideo
        ? options.videoMs
        : options.imageMs;
  return {
    _id: newId('sbx', 20),
    endpoint: options.endpoints[ENDPOINT_BY_CAPABILITY[generation.capability]],
    generation,
    behaviour,
    state: 'pending',
    ready_at: new Date(now + processingMs),
    outputs: [],
    error: null,
    render_owner: behaviour.kind === 'normal' ? claims.owner : null,
    render_lease_until: behaviour.kind === 'normal' ? claims.leaseUntil(now) : null,
    created_at: new Date(now),
  };
}

/** A stored media file's bytes: the renderer takes the user's pictures in memory. */
async function mediaBytes(store: MediaStore, mediaId: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await store.open(mediaId)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Renders a generation's media: the paths of temp files the caller owns (and deletes). */
async function renderGeneration(
  renderer: SandboxRenderer,
  generation: Generation,
  readMedia: (mediaId: string) => Promise<Buffer>,
  signal: AbortSignal,
): Promise<string[]> {
  if ('duration_seconds' in generation) {
    const { width, height } = videoDimensions(generation.resolution, generation.aspect_ratio);
    const image = generation.image ? await readMedia(generation.image.mediaId) : undefined;
    const video = await renderer.video(
      {
        prompt: generation.prompt,
        durationSeconds: generation.duration_seconds,
        width,
        height,
        audio: generation.generate_audio,
        seed: generation.seed,
        ...(image ? { image } : {}),
      },
      signal,
    );
    return [video];
  }
  const { width, height } = imageDimensions(generation.aspect_ratio);
  return renderer.images(
    {
      prompt: generation.prompt,
      width,
      height,
      count: generation.num_images,
      seed: generation.seed,
      references: await Promise.all(generation.images.map((image) => readMedia(image.mediaId))),
    },
    signal,
  );
}

const contentTypeOf = (generation: Generation) =>
  'duration_seconds' in generation ? 'video/mp4' : 'image/png';

/** Stores rendered files in the media store, one after the other: the request's outputs. */
async function storeOutputs(
  store: MediaStore,
  files: string[],
  contentType: 'video/mp4' | 'image/png',
): Promise<SandboxRequestDoc['outputs']> {
  const outputs = [];
  for (const file of files) {
    const mediaId = newMediaId(contentType === 'video/mp4' ? 'mp4' : 'png');
    await store.put(mediaId, createReadStream(file), contentType);
    outputs.push({ media_id: mediaId, content_type: contentType });
  }
  return outputs;
}

/** What a job shows for a failed render: the renderer's short message (ffmpeg's details stay in the log). */
function renderFailure(error: unknown): string {
  const reason = error instanceof RenderError ? `: ${error.message}` : '';
  return `The sandbox could not render this request${reason}`;
}
