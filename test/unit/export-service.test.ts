import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { ProjectCommands } from '../../actors/index.ts';
import { AppError } from '../../src/domain/errors.ts';
import type { AssetRecord, AssetsRepository } from '../../src/ports/assets-repository.ts';
import type {
  ExportChildren,
  ExportPool,
  ExportRunOptions,
  ExportSource,
  ExportWorkspaces,
  RunResult,
} from '../../src/ports/export-pool.ts';
import type { MediaStore } from '../../src/ports/media-store.ts';
import type { ProjectRecord } from '../../src/ports/projects-repository.ts';
import { createExportService } from '../../src/services/export.ts';

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
  events: { event: string; data: Record<string, unknown> }[];
  assets: AssetRecord[];
  stored: Set<string>;
  runs: number;
}

/** The service over fakes; `render` plays the pool's part for each run. */
function harness(
  options: {
    render?: (runOptions: ExportRunOptions) => Promise<RunResult>;
    storeFails?: boolean;
    stageFails?: AppError;
    ratePerMinute?: number;
    timeoutMs?: number;
  } = {},
): Harness {
  const state: Harness = { events: [], assets: [], stored: new Set(), runs: 0 } as unknown as Harness;
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
      outputPath: '/w/output.mp4',
      stage: async () => {
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
    run: async (_plan, runOptions) => {
      state.runs++;
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
    workspaces,
    children,
    filters: () => ({ loudnorm: true, sidechaincompress: true }),
    outputSize: () => ({ width: 1280, height: 720 }),
    mediaUrl: (id) => `http://x/media/${id}`,
    timeoutMs: options.timeoutMs ?? 60_000,
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
});
