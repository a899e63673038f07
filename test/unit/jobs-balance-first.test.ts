// A submit checks the user's balance before fetching input images: a user who cannot pay gets the
// debit's own 402 and the service downloads nothing, writes no job and sends no debit. The debit stays the
// authority: a balance that suffices at the check goes on to the fetch and the debit as before.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createJobsService, type JobsServiceDeps } from '../../src/jobs/jobs-service.ts';
import { createInboundImages, isAcceptedImageUrl } from '../../src/jobs/inbound-images.ts';
import { jobRoutes } from '../../src/jobs/routes.ts';
import { compileRouteInput } from '../../src/platform/http/route-input.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import { mediaLimits } from '../../workers/probe/media-limits.ts';
import type { VideoGenerateRequest, ImageGenerateRequest } from '../../schemas/jobs.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';

const principal = { keyId: 'key_1', userId: 'usr_1', scopes: ['video:write', 'image:write'] as const };
// Typed through unknown: the schemas' Static types of literal unions are `never` (a TypeBox inference limit).
const VIDEO = {
  prompt: 'a slow zoom',
  image_url: 'https://images.example.com/red.png',
  fast: false,
  duration_seconds: 5,
  aspect_ratio: '16:9',
  resolution: '720p',
  generate_audio: true,
} as unknown as VideoGenerateRequest;
const EDIT = {
  prompt: 'recolour',
  image_urls: ['https://images.example.com/a.png', 'https://images.example.com/b.png'],
  num_images: 2,
  aspect_ratio: '1:1',
} as unknown as ImageGenerateRequest;

/** A PNG's signature and header (IHDR: 16 × 16), as far as the input check reads. */
const PNG = Buffer.from('89504e470d0a1a0a0000000d494844520000001000000010080000003a98a0bd', 'hex');

/**
 * A jobs service whose every side effect is counted; `balance` is what the users repository holds. By default
 * a fetch answers 404; with `spentMeanwhile` the fetch succeeds and the debit then finds the balance gone (the
 * race the pre-check cannot close), so the job is written, refused by the debit, and removed.
 */
function harness(balance: number, options: { spentMeanwhile?: boolean } = {}) {
  const calls = { balanceOf: 0, fetch: 0, insert: 0, debit: 0, put: 0, delete: 0, removeIf: 0 };
  const refuse = (what: string) => () => Promise.reject(new Error(`${what} was not expected`));
  const store = {
    put: () => {
      calls.put++;
      return Promise.resolve();
    },
    stat: refuse('stat'),
    open: refuse('open'),
    delete: () => {
      calls.delete++;
      return Promise.resolve();
    },
  };
  const spent = options.spentMeanwhile === true;
  const deps = {
    jobs: {
      insert: () => {
        calls.insert++;
        return spent ? Promise.resolve() : Promise.reject(new Error('insert was not expected'));
      },
      removeIf: () => {
        calls.removeIf++;
        return Promise.resolve(true);
      },
    },
    credits: {
      debit: (_userId: string, command: { amount: number }) => {
        calls.debit++;
        if (!spent) return Promise.reject(new Error('debit was not expected'));
        return Promise.resolve({ ok: false, credits_required: command.amount, credits_remaining: 3 });
      },
      refund: refuse('refund'),
    },
    balanceOf: (userId: string) => {
      assert.equal(userId, principal.userId);
      calls.balanceOf++;
      return Promise.resolve(balance);
    },
    provider: { label: 'sandbox', submit: refuse('submit') },
    inbound: createInboundImages({
      store: store as unknown as MediaStore,
      fetchImage: () => {
        calls.fetch++;
        if (spent) return Promise.resolve({ contentType: 'image/png', data: PNG });
        return Promise.reject(new Error('the server answered HTTP 404'));
      },
      newMediaId: () => 'med_x',
      publicBaseUrl: 'http://127.0.0.1:8080',
      limits: mediaLimits(40_000_000),
    }),
    store,
    poller: { schedule: () => undefined },
    clock: { now: () => Date.now() },
    logger: pino({ level: 'silent' }),
    providerTimeoutMs: 60_000,
    pollIntervalMs: 1000,
  } as unknown as JobsServiceDeps;
  return { service: createJobsService(deps), calls };
}

async function answer(promise: Promise<unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof AppError, String(error));
    return { status: error.status, body: error.toBody() };
  }
  assert.fail('the submit was accepted');
}

describe('submit: the balance is checked before input images are fetched', () => {
  it('answers 402 with credits_required and credits_remaining, fetching nothing, for 0 credits', async () => {
    const { service, calls } = harness(0);
    assert.deepEqual(await answer(service.submitVideo(principal, VIDEO)), {
      status: 402,
      body: { error: 'Insufficient credits', credits_required: 1135, credits_remaining: 0 },
    });
    assert.deepEqual(calls, { balanceOf: 1, fetch: 0, insert: 0, debit: 0, put: 0, delete: 0, removeIf: 0 });
  });

  it('answers 402 one credit short, for a video and for an edit with two references', async () => {
    const video = harness(1134);
    assert.deepEqual((await answer(video.service.submitVideo(principal, VIDEO))).body, {
      error: 'Insufficient credits',
      credits_required: 1135,
      credits_remaining: 1134,
    });
    const edit = harness(99);
    assert.deepEqual((await answer(edit.service.submitImage(principal, EDIT))).body, {
      error: 'Insufficient credits',
      credits_required: 100,
      credits_remaining: 99,
    });
    assert.deepEqual([video.calls.fetch, edit.calls.fetch], [0, 0]);
  });

  it('goes on to fetch the inputs when the balance covers the price', async () => {
    const { service, calls } = harness(1135);
    assert.deepEqual(await answer(service.submitVideo(principal, VIDEO)), {
      status: 400,
      body: { error: 'image_url could not be fetched: the server answered HTTP 404' },
    });
    assert.deepEqual(calls, { balanceOf: 1, fetch: 1, insert: 0, debit: 0, put: 0, delete: 0, removeIf: 0 });
  });

  it("leaves the debit the authority: a balance spent after the check gets the debit's 402, the copies go", async () => {
    const { service, calls } = harness(1_000_000, { spentMeanwhile: true });
    assert.deepEqual(await answer(service.submitImage(principal, EDIT)), {
      status: 402,
      body: { error: 'Insufficient credits', credits_required: 100, credits_remaining: 3 },
    });
    assert.deepEqual(calls, { balanceOf: 1, fetch: 2, insert: 1, debit: 1, put: 2, delete: 2, removeIf: 1 });
  });

  it('answers the URL rules before reading the balance: the route validates the body before its handler', async () => {
    const { service, calls } = harness(0);
    const routes = jobRoutes(service, (url) => isAcceptedImageUrl(url, 'http://127.0.0.1:8080'));
    const own = 'http://127.0.0.1:8080/media/%E0%A4%A';
    const submit = (path: string, body: unknown) => {
      const route = routes.find((r) => r.path === path)!;
      try {
        compileRouteInput(route).body(Buffer.from(JSON.stringify(body)));
        return 'valid';
      } catch (error) {
        return (error as AppError).message;
      }
    };
    assert.equal(
      submit('/api/v1/video/vidmodel-2/generate', { ...VIDEO, image_url: own }),
      'image_url must be a https URL',
    );
    assert.equal(
      submit('/api/v1/image/nano-banana/generate', { ...EDIT, image_urls: [own] }),
      'image_urls items must be https URLs',
    );
    assert.equal(calls.balanceOf, 0);
  });
});
