import {
  CancelResponse,
  ImageGenerateBody,
  InsufficientCreditsResponse,
  JobListQuery,
  JobListResponse,
  JobParams,
  JobSchema,
  SubmitResponse,
  VideoGenerateBody,
  imageGenerateRules,
  videoGenerateRules,
  type ImageUrlAcceptance,
} from '../../schemas/jobs.ts';
import { ErrorSchema } from '../../schemas/common.ts';
import type { JobsService } from './jobs-service.ts';
import { defineRoute, reply, type ResponseSpec, type RouteDefinition } from '../platform/index.ts';

const common: Record<number, ResponseSpec> = {
  401: { description: 'Missing or invalid API key', schema: ErrorSchema },
  429: { description: 'Rate limit exceeded', schema: ErrorSchema },
};
const submitErrors = (scope: string): Record<number, ResponseSpec> => ({
  400: { description: 'Validation error (the message names the field)', schema: ErrorSchema },
  402: { description: 'Insufficient credits (nothing charged)', schema: InsufficientCreditsResponse },
  403: { description: `Missing scope ${scope}`, schema: ErrorSchema },
  502: { description: 'Provider submission failed; credits already refunded', schema: ErrorSchema },
  ...common,
});

/** The generation and job routes (docs/api.md, Routes); `acceptsImageUrl` knows our own media. */
export function jobRoutes(service: JobsService, acceptsImageUrl: ImageUrlAcceptance): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/api/v1/video/vidmodel-2/generate',
      auth: { kind: 'key', scope: 'video:write' },
      tags: ['generation'],
      summary: 'Submit a video generation (text-to-video, image-to-video, or the fast variant)',
      body: VideoGenerateBody,
      bodyRules: videoGenerateRules(acceptsImageUrl),
      responses: { 202: { description: 'Accepted', schema: SubmitResponse }, ...submitErrors('video:write') },
      handle: async (ctx) => reply(202, await service.submitVideo(ctx.principal, ctx.body)),
    }),
    defineRoute({
      method: 'POST',
      path: '/api/v1/image/nano-banana/generate',
      auth: { kind: 'key', scope: 'image:write' },
      tags: ['generation'],
      summary: 'Submit an image generation (or an edit of 1 to 9 reference images)',
      body: ImageGenerateBody,
      bodyRules: imageGenerateRules(acceptsImageUrl),
      responses: { 202: { description: 'Accepted', schema: SubmitResponse }, ...submitErrors('image:write') },
      handle: async (ctx) => reply(202, await service.submitImage(ctx.principal, ctx.body)),
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/jobs',
      auth: { kind: 'key' },
      tags: ['jobs'],
      summary: "The key's user's jobs, newest first",
      query: JobListQuery,
      responses: {
        200: { description: 'A page of jobs', schema: JobListResponse },
        400: { description: 'Invalid query', schema: ErrorSchema },
        ...common,
      },
      handle: async (ctx) => reply(200, await service.list(ctx.principal.userId, ctx.query)),
    }),
    defineRoute({
      method: 'GET',
      path: '/api/v1/jobs/:job_id',
      auth: { kind: 'key' },
      tags: ['jobs'],
      summary: 'Read a job: status, result, error',
      params: JobParams,
      responses: {
        200: { description: 'The job', schema: JobSchema },
        404: { description: 'Unknown job, or another user’s', schema: ErrorSchema },
        ...common,
      },
      handle: async (ctx) => reply(200, await service.get(ctx.principal.userId, ctx.params.job_id)),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/api/v1/jobs/:job_id',
      auth: { kind: 'key' },
      tags: ['jobs'],
      summary: 'Cancel a processing job; its full cost is refunded',
      params: JobParams,
      responses: {
        200: { description: 'Cancelled', schema: CancelResponse },
        404: { description: 'Unknown job, or another user’s', schema: ErrorSchema },
        409: { description: 'Already completed, failed or cancelled', schema: ErrorSchema },
        ...common,
      },
      handle: async (ctx) => reply(200, await service.cancel(ctx.principal.userId, ctx.params.job_id)),
    }),
  ];
}
