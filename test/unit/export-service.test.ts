import { describe, it } from 'node:test';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createInProcessEventBus } from '../../actors/runtime/event-bus.ts';
import { type ProjectCommands } from '../../actors/project.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import type { AssetRecord, AssetsRepository } from '../../actors/ports/assets-repository.ts';
import type {
  ExportChildren,
  ExportPlan,
  ExportPool,
  ExportRunOptions,
  ExportSource,
  ExportWorkspaces,
  RunResult,
} from '../../workers/export/work-order.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';
import type { ProjectRecord } from '../../actors/ports/projects-repository.ts';
import type { EventBus } from '../../src/platform/core/event-bus.ts';
import { createExportService } from '../../src/export/export-service.ts';
import type { UnsupportedFeature } from '../../workers/export/filter-support.ts';
import { createExportQueue, type ExportQueue } from '../../src/export/export-queue.ts';
import { createExportMetrics } from '../../src/export/export-metrics.ts';
import { createMetricsRegistry, type MetricsRegistry } from '../../src/platform/observability/metrics.ts';

// The export use case against fakes of its ports: the order of its answers, how a run's end becomes an error
// code, the stored result of an unchanged timeline, and the order of its events. The real pool, ffmpeg and
// store are covered by the integration and e2e tests; here every outcome can be forced exactly.

const video: ExportSource = {
  path: '/w/v.mp4',
  demuxer: 'mov',
  kind: 'video',
  durationSec: 4,
  video: { codec: 'h264', width: 320, height: 240, fps: 25, pixFmt: 'yuv420p' },
  audio: { codec: 'aac', sampleRate: 48000, channels: 2 },
};

function project(clipTracks: ('video' | 'voice')[] = ['video']): ProjectRecord {
  const at = new Date(0);
  return {
    id: 'vp_1',
    user_id: 'usr_1',
    name: 'P',
    description: '',
    aspect_ratio: '16:9',
    context_md: '',
    videos: [{ id: 'vv_1', name: 'Main video', aspect_ratio: '16:9', created_at: at }],
    clips: clipTracks.map((track, idx) => ({
      id: `vc_${idx}`,
      video_id: 'vv_1',
      track,
      idx: 0,
      asset_id: 'va_src',
      start_sec: null,
      trim_start_sec: 0,
      duration_sec: null,
      volume: 1,
      created_at: at,
    })),
    revision: 3,
    seq: 10,
    version: 1,
    turn: null,
    queue: [],
    applied_ops: [],
    created_at: at,
    updated_at: at,
  };
}

interface Harness {
  service: ReturnType<typeof createExportService>;
  bus: EventBus;
  queue: ExportQueue;
  /** Whether the project exists, for the periodic check (true until a test says otherwise). */
  exists: boolean;
  events: { event: string; data: Record<string, unknown> }[];
  assets: AssetRecord[];
  stored: Set<string>;
  runs: number;
  /** The registry the service's export metrics are in. */
  metrics: MetricsRegistry;
}

/** The service over fakes; `render` plays the pool's part for each run. */
function harness(
  options: {
    render?: (runOptions: ExportRunOptions) => Promise<RunResult>;
    storeFails?: boolean;
    stageFails?: AppError;
    /** Staging waits for this before it answers. */
    stageGate?: Promise<unknown>;
    slots?: number;
    ratePerMinute?: number;
    timeoutMs?: number;
    unsupported?: (plan: ExportPlan) => UnsupportedFeature[];
    /** Where the fake workspace's output goes (default `/w/output.mp4`, never written). */
    outputPath?: string;
    /** Sees each plan the pool is given. */
    onPlan?: (plan: ExportPlan) => Promise<void>;
  } = {},
): Harness {
  const state: Harness = {
    events: [],
    assets: [],
    stored: new Set(),
    runs: 0,
    bus: createInProcessEventBus(),
    queue: createExportQueue({ slots: options.slots ?? 4, perUser: 1 }),
    exists: true,
    metrics: createMetricsRegistry(),
  } as unknown as Harness;
  const sourceAsset: AssetRecord = {
    id: 'va_src',
    project_id: 'vp_1',
    user_id: 'usr_1',
    kind: 'video',
    source: 'upload',
    media_id: 'med_src.mp4',
    content_type: 'video/mp4',
    metadata: {},
    created_at: new Date(0),
  };
  state.assets.push(sourceAsset);
  const assets = {
    get: async (id: string) => state.assets.find((asset) => asset.id === id) ?? null,
    listByProject: async () => [...state.assets],
  } as unknown as AssetsRepository;
  const store = {
    stat: async (id: string) => (state.stored.has(id) ? { id } : null),
    delete: async (id: string) => void state.stored.delete(id),
  } as unknown as MediaStore;
  const commands = {
    export_event: async (_projectId: string, message: { event: string; data: Record<string, unknown> }) => {
      state.events.push({ event: message.event, data: message.data });
      return { ok: true, events: [], revision: 3 };
    },
    export_completed: async (
      _projectId: string,
      message: {
        export_id: string;
        asset: { id: string; media_id: string; metadata: Record<string, unknown> };
      },
    ) => {
      state.events.push({ event: 'export.completed', data: { export_id: message.export_id } });
      state.assets.push({
        ...sourceAsset,
        ...message.asset,
        source: 'export',
        created_at: new Date(),
      });
      return { asset: { id: message.asset.id, url: `http://x/media/${message.asset.media_id}` } };
    },
  } as unknown as ProjectCommands;
  const workspaces: ExportWorkspaces = {
    open: async () => ({
      outputPath: options.outputPath ?? '/w/output.mp4',
      stage: async () => {
        await options.stageGate;
        if (options.stageFails) throw options.stageFails;
        return video;
      },
      probeOutput: async () => ({ ...video, durationSec: 4 }),
      storeOutput: async (mediaId: string) => {
        if (options.storeFails) throw new AppError('unavailable', 'storage_unconfigured', { message: 'x' });
        state.stored.add(mediaId);
      },
      remove: async () => undefined,
    }),
    removeLeftovers: async () => undefined,
  };
  const pool: ExportPool = {
    run: async (plan, runOptions) => {
      state.runs++;
      await options.onPlan?.(plan);
      return (options.render ?? (async () => ({ ok: true }) as RunResult))(runOptions);
    },
    close: async () => undefined,
  };
  const children: ExportChildren = { started() {}, ended() {}, killLeftovers: async () => [] };
  state.service = createExportService({
    commands,
    assets,
    store,
    pool,
    queue: state.queue,
    events: state.bus,
    projectExists: async () => state.exists,
    workspaces,
    children,
    filters: () => ({ loudnorm: true, sidechaincompress: true }),
    unsupported: options.unsupported ?? (() => []),
    outputSize: (_ratio, quality) =>
      quality === 'preview' ? { width: 640, height: 360 } : { width: 1280, height: 720 },
    mediaUrl: (id) => `http://x/media/${id}`,
    timeoutMs: options.timeoutMs ?? 60_000,
    metrics: createExportMetrics(state.metrics),
    ratePerMinute: options.ratePerMinute ?? 100,
    clock: { now: () => Date.now() },
    logger: pino({ level: 'silent' }),
  });
  return state;
}

const exportOf = (h: Harness, p = project(), fit: 'fit' | 'fill' = 'fit') =>
  h.service.export('usr_1', p, p.videos[0]!, { fit });

async function rejectsWith(promise: Promise<unknown>, status: number, code: string): Promise<AppError> {
  const error = await promise.then(
    () => assert.fail(`expected ${code}`),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof AppError, String(error));
  assert.equal(error.status, status);
  assert.equal(error.message, code);
  assert.equal(typeof error.details.message, 'string');
  return error;
}

/** A pool run that reports a child, then ends as `result` once aborted (as the real pool does). */
const untilAborted =
  (result: Omit<Extract<RunResult, { ok: false }>, 'ok'>, pid?: number) =>
  (runOptions: ExportRunOptions): Promise<RunResult> =>
    new Promise((resolve) => {
      if (pid !== undefined) runOptions.onPid?.(pid, true);
      runOptions.signal?.addEventListener('abort', () => resolve({ ok: false, ...result }));
    });

/** Waits (up to a second) until `condition` holds. */
async function eventually(what: string, condition: () => boolean): Promise<void> {
  for (let tries = 0; tries < 200 && !condition(); tries++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(condition(), what);
}

/** The answer of an export whose project was deleted: the route's own 404. */
async function rejectsGone(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => assert.fail('expected the 404'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof AppError, String(error));
  assert.equal(error.status, 404);
  assert.deepEqual(error.toBody(), { error: 'Project not found' });
}

const deletion = {
  type: 'project.deleted',
  seq: 11,
  ts: new Date(0).toISOString(),
  project_id: 'vp_1',
  video_id: null,
  turn_id: null,
  data: { project_id: 'vp_1' },
};

describe('export service', () => {
  it('answers no_video_clips before counting the export against the rate', async () => {
    const h = harness({ ratePerMinute: 1 });
    await rejectsWith(exportOf(h, project(['voice'])), 400, 'no_video_clips');
    const done = await exportOf(h);
    assert.equal(done.video_clip_count, 1);
    assert.equal(h.runs, 1);
  });

  it('returns the stored export of an unchanged (video, revision, fit), which still counts toward the rate', async () => {
    const h = harness({ ratePerMinute: 2 });
    const first = await exportOf(h);
    const again = await exportOf(h);
    assert.deepEqual(again, first);
    assert.equal(h.runs, 1);
    const limited = await rejectsWith(exportOf(h, project(), 'fill'), 429, 'rate_limited');
    assert.match(limited.headers['retry-after'] ?? '', /^\d+$/);
  });

  it('renders again for another fit, another revision, or a stored file that is gone', async () => {
    const h = harness();
    const first = await exportOf(h);
    await exportOf(h, project(), 'fill');
    await exportOf(h, { ...project(), revision: 4 });
    assert.equal(h.runs, 3);
    h.stored.clear();
    const fresh = await exportOf(h);
    assert.notEqual(fresh.asset_id, first.asset_id);
    assert.equal(h.runs, 4);
  });

  it('keeps previews and finals apart: each stored export is reused only for its own quality', async () => {
    const h = harness();
    const final = await exportOf(h);
    const preview = await h.service.export('usr_1', project(), project().videos[0]!, { quality: 'preview' });
    assert.notEqual(preview.asset_id, final.asset_id);
    assert.equal(h.runs, 2);
    const previewAsset = h.assets.find((asset) => asset.id === preview.asset_id)!;
    assert.equal(previewAsset.metadata.quality, 'preview');
    assert.deepEqual([previewAsset.metadata.width, previewAsset.metadata.height], [640, 360]);
    assert.equal(h.assets.find((asset) => asset.id === final.asset_id)!.metadata.quality, 'final');
    const again = await h.service.export('usr_1', project(), project().videos[0]!, { quality: 'preview' });
    assert.equal(again.asset_id, preview.asset_id);
    assert.deepEqual(await exportOf(h), final);
    assert.equal(h.runs, 2);
  });

  it('writes each line of a text clip to its own file beside the output before rendering', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'export-service-text-'));
    try {
      const seen: string[] = [];
      const h = harness({
        outputPath: join(dir, 'output.mp4'),
        onPlan: async (plan) => {
          assert.equal(plan.texts?.[0]?.text, "Hello, 'world'");
          seen.push(...(await readdir(dir)));
          seen.push(await readFile(join(dir, 'output.mp4.text0-0.txt'), 'utf8'));
        },
      });
      const p = project();
      // A text clip as the text track stores it: no asset (the record type here predates the track).
      const text = { ...p.clips[0]!, id: 'vc_t', track: 'text', asset_id: null, text: "Hello, 'world'" };
      p.clips.push(text as unknown as ProjectRecord['clips'][number]);
      await h.service.export('usr_1', p, p.videos[0]!, {});
      assert.deepEqual(seen, ['output.mp4.text0-0.txt', "Hello, 'world'"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('answers 422 unsupported_feature naming the filter and the effect, and renders nothing', async () => {
    const h = harness({ unsupported: () => [{ feature: 'transitions', filter: 'xfade' }] });
    const error = await rejectsWith(exportOf(h), 422, 'unsupported_feature');
    assert.match(String(error.details.message), /xfade filter, which transitions need/);
    assert.equal(h.runs, 0);
    assert.ok(h.events.some((e) => e.event === 'export.failed' && e.data.error === 'unsupported_feature'));
  });

  it('times out as export_timeout while waiting for a worker, and as ffmpeg_timeout once ffmpeg runs', async () => {
    const queued = harness({
      timeoutMs: 80,
      render: untilAborted({ reason: 'aborted', code: null, signal: null, stderrTail: '' }),
    });
    await rejectsWith(exportOf(queued), 504, 'export_timeout');
    const encoding = harness({
      timeoutMs: 80,
      render: untilAborted({ reason: 'aborted', code: null, signal: null, stderrTail: '' }, 4242),
    });
    await rejectsWith(exportOf(encoding), 504, 'ffmpeg_timeout');
    assert.deepEqual(
      encoding.events.map((e) => e.event),
      ['export.started', 'export.failed'],
    );
    assert.equal(encoding.events[1]!.data.error, 'ffmpeg_timeout');
  });

  it("times out as export_timeout while it waits for its user's turn, and gives nothing back it did not take", async () => {
    // Only the first run starts a child: a second that got the worker at the end would not count as waiting.
    let started = 0;
    const h = harness({
      timeoutMs: 150,
      render: (runOptions) =>
        untilAborted(
          { reason: 'aborted', code: null, signal: null, stderrTail: '' },
          ++started === 1 ? 4242 : undefined,
        )(runOptions),
    });
    // EXPORT_PER_USER=1: the second export of the user waits although workers are free.
    const first = exportOf(h);
    await eventually('the first export encodes', () => h.runs === 1);
    const second = exportOf(h, project(), 'fill');
    await eventually('the second waits', () => h.queue.counts().waiting === 1);
    await rejectsWith(first, 504, 'ffmpeg_timeout');
    await rejectsWith(second, 504, 'export_timeout');
    assert.deepEqual(h.queue.counts(), { waiting: 0, holding: 0, users: 0 });
  });

  it('maps ffmpeg exiting non-zero to ffmpeg_failed, a dead worker to export_failed, a full store to storage_unconfigured', async () => {
    const exit = harness({
      render: async () => ({
        ok: false,
        reason: 'exit',
        code: 69,
        signal: null,
        stderrTail: '/secret/path: error',
      }),
    });
    const failed = await rejectsWith(exportOf(exit), 500, 'ffmpeg_failed');
    assert.doesNotMatch(JSON.stringify(failed.toBody()), /secret/);
    await rejectsWith(
      exportOf(harness({ render: () => Promise.reject(new Error('worker died')) })),
      500,
      'export_failed',
    );
    const full = harness({ storeFails: true });
    await rejectsWith(exportOf(full), 503, 'storage_unconfigured');
    assert.equal(full.assets.filter((asset) => asset.source === 'export').length, 0);
  });

  it('counts each call by outcome, and the encoding time against the seconds of video made', async () => {
    const h = harness({
      ratePerMinute: 4,
      render: async () => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        return { ok: true };
      },
    });
    await exportOf(h);
    await exportOf(h); // unchanged: the stored export
    await rejectsWith(exportOf(h, project(['voice'])), 400, 'no_video_clips');
    await exportOf(h, project(), 'fill');
    await h.service.export('usr_1', project(), project().videos[0]!, { quality: 'preview' });
    await rejectsWith(exportOf(h, { ...project(), revision: 9 }), 429, 'rate_limited');
    const text = h.metrics.render();
    const sample = (series: string) => {
      const line = text.split('\n').find((one) => one.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    assert.equal(sample('mf_exports_total{quality="final",outcome="completed"}'), 2);
    assert.equal(sample('mf_exports_total{quality="final",outcome="reused"}'), 1);
    assert.equal(sample('mf_exports_total{quality="final",outcome="no_video_clips"}'), 1);
    assert.equal(sample('mf_exports_total{quality="final",outcome="rate_limited"}'), 1);
    assert.equal(sample('mf_exports_total{quality="preview",outcome="completed"}'), 1);
    // Three renders of the harness's 4 s output, each holding the worker at least 30 ms.
    assert.equal(sample('mf_export_output_seconds_total{quality="final"}'), 8);
    assert.equal(sample('mf_export_output_seconds_total{quality="preview"}'), 4);
    const encoded = sample('mf_export_encode_seconds_total{quality="final"}')!;
    assert.ok(encoded >= 0.058 && encoded < 2, `final encode seconds ${encoded}`);
  });

  it('passes the stage errors through as they are', async () => {
    const corrupt = new AppError('unprocessable', 'corrupt_source', { message: 'x' });
    await rejectsWith(exportOf(harness({ stageFails: corrupt })), 422, 'corrupt_source');
  });

  it('announces progress between export.started and export.completed, never after', async () => {
    const h = harness({
      render: async (runOptions) => {
        runOptions.onProgress?.(0.5);
        runOptions.onProgress?.(0.6); // within a second of the last: skipped
        return { ok: true };
      },
    });
    await exportOf(h);
    assert.deepEqual(
      h.events.map((e) => [e.event, e.data.fraction]),
      [
        ['export.started', undefined],
        ['export.progress', 0.5],
        ['export.completed', undefined],
      ],
    );
    assert.equal(new Set(h.events.map((e) => e.data.export_id)).size, 1);
  });

  describe('deleting the project', () => {
    const aborted = { reason: 'aborted', code: null, signal: null, stderrTail: '' } as const;

    it('stops an encoding export at its project.deleted event: 404, its ffmpeg aborted, no export.failed', async () => {
      let abortedRuns = 0;
      const h = harness({
        render: (runOptions) => {
          runOptions.signal?.addEventListener('abort', () => abortedRuns++);
          return untilAborted(aborted, 4242)(runOptions);
        },
      });
      const answer = exportOf(h);
      await eventually('the export encodes', () => h.runs === 1);
      // Another project's deletion and this project's other events change nothing.
      await h.bus.publish('project.vp_2', { ...deletion, project_id: 'vp_2' });
      await h.bus.publish('project.vp_1', { ...deletion, type: 'clip.removed' });
      await new Promise((r) => setTimeout(r, 20)); // a wait for nothing: neither may abort the run
      assert.equal(abortedRuns, 0);
      await h.bus.publish('project.vp_1', deletion);
      await rejectsGone(answer);
      assert.equal(abortedRuns, 1);
      assert.deepEqual(
        h.events.map((e) => e.event),
        ['export.started'],
      );
      assert.deepEqual(h.queue.counts(), { waiting: 0, holding: 0, users: 0 });
    });

    it('drops the exports of the project that wait for a worker, and gives the worker to the next', async () => {
      const h = harness({ slots: 1, render: untilAborted(aborted, 4242) });
      const other = project();
      other.id = 'vp_2';
      const holding = h.service.export('usr_2', other, other.videos[0]!, {});
      await eventually('the other project encodes', () => h.runs === 1);
      const waiting = exportOf(h);
      await eventually('the export waits', () => h.queue.counts().waiting === 1);
      await h.bus.publish('project.vp_1', deletion);
      await rejectsGone(waiting);
      assert.equal(h.runs, 1, 'the dropped export never ran');
      assert.deepEqual(h.queue.counts(), { waiting: 0, holding: 1, users: 1 });
      await h.bus.publish('project.vp_2', { ...deletion, project_id: 'vp_2' });
      await rejectsGone(holding);
      assert.deepEqual(h.queue.counts(), { waiting: 0, holding: 0, users: 0 });
    });

    it('stops an export that is still staging its sources', async () => {
      let open!: () => void;
      const h = harness({ stageGate: new Promise<void>((resolve) => (open = resolve)) });
      const answer = exportOf(h);
      await eventually('export.started', () => h.events.length === 1);
      await h.bus.publish('project.vp_1', deletion);
      await rejectsGone(answer);
      open();
      assert.equal(h.runs, 0);
    });

    it('the periodic check stops an export whose deletion event was missed', async () => {
      const h = harness({ render: untilAborted(aborted, 4242) });
      const answer = exportOf(h);
      await eventually('the export encodes', () => h.runs === 1);
      await h.service.checkProjects();
      assert.equal(h.runs, 1);
      h.exists = false;
      await h.service.checkProjects();
      await rejectsGone(answer);
    });
  });
});
