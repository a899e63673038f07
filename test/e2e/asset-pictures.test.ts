// Pictures of assets end to end (docs/editor.md, Pictures of assets): the service as a process, real HTTP, media
// made by ffmpeg at test time. An upload answers with its pictures' URLs, and `/media` serves them with their
// content types (JPEGs that decode, a waveform that parses); an older asset, its pictures taken away in the
// database, is answered at once without them on read and gets them by an `asset.updated` event on the events
// socket, the revision unchanged; deleting the project removes them with its files.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import {
  checkTurnAnswer,
  editorClient,
  editorUser,
  withServiceLogs,
  type Asset,
  type EditorEvent,
} from '../helpers/editor.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';
import { ffmpegRun, probeFile } from '../helpers/media-analysis.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService } from '../helpers/service.ts';

const DB = 'asset_pictures';
const PICTURE_KEYS = ['poster_url', 'filmstrip_url', 'filmstrip_frames', 'waveform_url', 'has_sound'];

describe('pictures of assets (the service as a process)', () => {
  let mongo: TestMongo;
  let db: MongoClient;
  let service: RunningService;
  const dir = mkdtempSync(join(tmpdir(), 'mf-pictures-e2e-'));
  const media: Record<string, Buffer> = {};

  before(async () => {
    mongo = await startMongo();
    db = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    await db.connect();
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: DB,
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '200',
      PROVIDER_TIMEOUT_MS: '60000',
      RATE_LIMIT_PER_MINUTE: '1000000',
    });
    const video = join(dir, 'clip.mp4');
    await ffmpegRun([
      ...['-f', 'lavfi', '-i', 'testsrc2=s=1280x720:r=30:d=3'],
      ...['-f', 'lavfi', '-i', 'aevalsrc=0.5*sin(2*PI*440*t):s=48000:d=3'],
      ...[
        '-c:v',
        'libx264',
        '-preset',
        'ultrafast',
        '-pix_fmt',
        'yuv420p',
        '-c:a',
        'aac',
        '-b:a',
        '192k',
        '-shortest',
        video,
      ],
    ]);
    const image = join(dir, 'still.png');
    await ffmpegRun(['-f', 'lavfi', '-i', 'color=c=green:s=800x600', '-frames:v', '1', image]);
    const sound = join(dir, 'tone.wav');
    await ffmpegRun([
      '-f',
      'lavfi',
      '-i',
      'aevalsrc=0.25*sin(2*PI*440*t):s=44100:d=2',
      '-c:a',
      'pcm_s16le',
      sound,
    ]);
    media.video = readFileSync(video);
    media.image = readFileSync(image);
    media.sound = readFileSync(sound);
  });
  after(async () => {
    await service?.stop();
    await db?.close();
    await mongo?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const logged = <T>(body: () => Promise<T>) => withServiceLogs(() => [service], body);

  async function setUp() {
    const user = await editorUser(service);
    const editor = editorClient(() => service, user.token);
    const project = await editor.createProject({ name: 'Pictures' });
    return { token: user.token, editor, projectId: project.id };
  }

  /** Fetches a picture through `/media`: 200 with `contentType`; answers its bytes. */
  async function fetched(url: unknown, contentType: string): Promise<Buffer> {
    assert.equal(typeof url, 'string', 'a URL');
    assert.ok((url as string).startsWith(`${service.url}/media/med_`), String(url));
    const response = await fetch(url as string);
    assert.equal(response.status, 200, String(url));
    assert.equal(response.headers.get('content-type'), contentType);
    return Buffer.from(await response.arrayBuffer());
  }

  /** A JPEG through `/media`, decoded by ffprobe: its size. */
  async function jpegSize(url: unknown): Promise<{ width: number; height: number }> {
    const path = join(dir, `picture-${Math.random().toString(36).slice(2)}.jpg`);
    writeFileSync(path, await fetched(url, 'image/jpeg'));
    const { streams } = await probeFile(path);
    assert.equal(streams[0]!.codec_name, 'mjpeg');
    return { width: streams[0]!.width!, height: streams[0]!.height! };
  }

  async function waveform(url: unknown): Promise<{ peaks_per_second: number; peaks: number[] }> {
    return JSON.parse((await fetched(url, 'application/json')).toString('utf8')) as {
      peaks_per_second: number;
      peaks: number[];
    };
  }

  it('answers an upload with its pictures, served by /media with their content types', (t) =>
    logged(async () => {
      const { token, editor, projectId } = await setUp();
      const socket = await openEventsSocket(service.url, projectId, { token });
      /**
       * The upload's metadata with its pictures. The upload waits 10 s for them; on a machine busy with other
       * tests they may come later, by `asset.updated` (the integration test checks the wait itself).
       */
      const pictured = async (answer: { status: number; body: { asset?: Asset } }) => {
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        const asset = answer.body.asset!;
        if (typeof asset.metadata.has_sound === 'boolean') return { asset, metadata: asset.metadata };
        t.diagnostic(`${asset.kind}: its pictures came after the upload's answer, by asset.updated`);
        const isUpdate = (event: EditorEvent) =>
          event.type === 'asset.updated' && (event.data.asset as Asset).id === asset.id;
        const events = await socket.waitFor('asset.updated', (seen) => seen.some(isUpdate), 60_000);
        return { asset, metadata: (events.find(isUpdate)!.data.asset as Asset).metadata };
      };
      try {
        const video = await pictured(await editor.upload(projectId, media.video!, 'video/mp4'));
        const v = video.metadata;
        assert.equal(v.has_sound, true);
        assert.deepEqual(await jpegSize(v.poster_url), { width: 640, height: 360 });
        const strip = await jpegSize(v.filmstrip_url);
        assert.equal(v.filmstrip_frames, 10);
        assert.deepEqual(strip, { width: 10 * 160, height: 90 });
        const videoPeaks = await waveform(v.waveform_url);
        assert.equal(videoPeaks.peaks_per_second, 50);
        assert.ok(videoPeaks.peaks.every((peak) => peak >= 0 && peak <= 1));
        // The tone's amplitude, as most slices show it: AAC's artefacts lift a few peaks (they are in the file).
        const median = [...videoPeaks.peaks].sort((a, b) => a - b)[videoPeaks.peaks.length >> 1]!;
        assert.ok(Math.abs(median - 0.5) < 0.03, `${median} ≈ 0.5`);

        const i = (await pictured(await editor.upload(projectId, media.image!, 'image/png'))).metadata;
        assert.equal(i.has_sound, false);
        assert.deepEqual(await jpegSize(i.poster_url), { width: 640, height: 480 });
        assert.equal(i.filmstrip_url, undefined);
        assert.equal(i.waveform_url, undefined);

        const s = (await pictured(await editor.upload(projectId, media.sound!, 'audio/wav'))).metadata;
        assert.equal(s.has_sound, true);
        assert.equal(s.poster_url, undefined);
        const peaks = await waveform(s.waveform_url);
        assert.equal(peaks.peaks.length, 100);
        for (const peak of peaks.peaks) assert.ok(Math.abs(peak - 0.25) < 0.002, `${peak} ≈ 0.25`);

        // The state shows them.
        const state = await editor.state(projectId);
        const byId = new Map(state.body.assets.map((asset) => [asset.id, asset]));
        assert.deepEqual(byId.get(video.asset.id)!.metadata, v);

        // Deleting the project removes its pictures with its files.
        await socket.close();
        const deleted = await editor.send('DELETE', `/${projectId}`);
        assert.equal(deleted.status, 200);
        for (const url of [v.poster_url, v.filmstrip_url, v.waveform_url, i.poster_url, s.waveform_url]) {
          assert.equal((await fetch(url as string)).status, 404, `${String(url)} is gone`);
        }
      } finally {
        await socket.close();
      }
    }));

  it('gives an older asset its pictures after a read that answers at once, by asset.updated', () =>
    logged(async () => {
      const { token, editor, projectId } = await setUp();
      const upload = await editor.upload(projectId, media.video!, 'video/mp4');
      assert.equal(upload.status, 200, JSON.stringify(upload.body));
      const made = upload.body.asset;
      // As an asset stored before pictures existed.
      const unset = Object.fromEntries(PICTURE_KEYS.map((key) => [`metadata.${key}`, '']));
      await db
        .db(DB)
        .collection('project_assets')
        .updateOne({ _id: made.id as never }, { $unset: unset });

      const socket = await openEventsSocket(service.url, projectId, { token });
      try {
        const read = await editor.state(projectId);
        assert.equal(read.status, 200);
        const older = read.body.assets.find((asset) => asset.id === made.id)!;
        for (const key of PICTURE_KEYS) assert.equal(older.metadata[key], undefined, `${key}: not yet`);
        const revision = read.body.project.revision;

        const events = await socket.waitFor(
          'asset.updated',
          (seen) => seen.some((event) => event.type === 'asset.updated'),
          30_000,
        );
        const updated = events.find((event) => event.type === 'asset.updated')!;
        assert.equal(updated.video_id, null);
        assert.equal(updated.turn_id, null);
        assert.equal(updated.data.revision, undefined, 'pictures are no edit');
        const asset = updated.data.asset as Asset;
        assert.equal(asset.id, made.id);
        assert.equal(asset.metadata.has_sound, true);
        assert.equal(asset.metadata.filmstrip_frames, 10);
        assert.deepEqual(await jpegSize(asset.metadata.poster_url), { width: 640, height: 360 });
        await jpegSize(asset.metadata.filmstrip_url);
        assert.ok((await waveform(asset.metadata.waveform_url)).peaks.length > 0);

        const again = await editor.state(projectId);
        assert.equal(again.body.project.revision, revision, 'the revision is unchanged');
        assert.deepEqual(again.body.assets.find((one) => one.id === made.id)!.metadata, asset.metadata);
        // Done: reading again makes nothing more.
        await new Promise((resolve) => setTimeout(resolve, 500));
        assert.equal(socket.events.filter((event) => event.type === 'asset.updated').length, 1);
      } finally {
        await socket.close();
      }
    }));

  it("answers a turn's generated scene with its pictures, the turn's events in order", () =>
    logged(async () => {
      const { token, editor, projectId } = await setUp();
      const socket = await openEventsSocket(service.url, projectId, { token });
      try {
        const plan = await editor.instruct(projectId, { instruction: 'a 3-scene video about a lighthouse' });
        checkTurnAnswer(plan, projectId);
        const turn = await editor.instruct(projectId, { instruction: 'continue' });
        checkTurnAnswer(turn, projectId);
        const [scene] = turn.body.assets_created;
        assert.ok(scene, JSON.stringify(turn.body));
        assert.equal(scene.source, 'agent_generate');
        const created = turn.body.agent_events.find((event) => event.type === 'asset.created')!;
        assert.deepEqual(
          (created.data.asset as Asset).metadata,
          scene.metadata,
          'asset.created carries the same',
        );
        let { metadata } = scene;
        if (typeof metadata.has_sound !== 'boolean') {
          // Later than the turn waits (a machine busy with other tests): they follow by asset.updated.
          const isUpdate = (event: EditorEvent) =>
            event.type === 'asset.updated' && (event.data.asset as Asset).id === scene.id;
          const events = await socket.waitFor('asset.updated', (seen) => seen.some(isUpdate), 60_000);
          metadata = (events.find(isUpdate)!.data.asset as Asset).metadata;
        }
        assert.equal(typeof metadata.has_sound, 'boolean');
        assert.equal(metadata.filmstrip_frames, 10);
        await jpegSize(metadata.poster_url);
        const strip = await jpegSize(metadata.filmstrip_url);
        assert.equal(strip.height, 90);
      } finally {
        await socket.close();
      }
    }));
});
