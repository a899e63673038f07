// The pictures of assets (docs/editor.md, Pictures of assets) with real ffmpeg, a real media store and the
// project actor on a real MongoDB-wire server: files made by ffmpeg at test time are added through the
// commands with pictures, and what comes back is decoded again — the poster a JPEG within 640 px, the
// filmstrip one row of frames taken in order through the video, the waveform's peaks the tones' own
// amplitudes. Then the ways they come later: past the wait, for an export, for an older asset on read
// (`asset.updated`, revision unchanged), and a file that gives none still being added.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import pino from 'pino';
import { createFsMediaStore } from '../../src/platform/storage/fs-store.ts';
import { newMediaId } from '../../src/platform/storage/media-id.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';
import { newId } from '../../src/platform/core/ids.ts';
import { actorTopic } from '../../actors/runtime/define.ts';
import { PROJECT_ACTOR } from '../../actors/project.ts';
import type { ProjectEvent } from '../../actors/ports/event-history.ts';
import type { AssetView } from '../../actors/project-views.ts';
import { createAssetPictures, type AssetPictures } from '../../src/editor/asset-pictures.ts';
import { FILMSTRIP_ONE_PASS_MAX_SEC } from '../../workers/pictures/picture-args.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startEditorStack, type EditorStack } from '../helpers/editor-stack.ts';
import { ffmpeg, ffmpegRun, ffprobe, probeFile, rgbAt, rgbFrames } from '../helpers/media-analysis.ts';
import { sleep, until } from '../helpers/wait.ts';

const MEDIA_URL = 'http://127.0.0.1/media/';
/** Five seconds, one colour a second: filmstrip frame `i` of 10 must show colour `floor(i / 2)`. */
const COLOURS: Array<[string, [number, number, number]]> = [
  ['red', [255, 0, 0]],
  ['lime', [0, 255, 0]],
  ['blue', [0, 0, 255]],
  ['white', [255, 255, 255]],
  ['yellow', [255, 255, 0]],
];

describe('pictures of assets (real ffmpeg, store and actor)', () => {
  let mongo: TestMongo;
  let stack: EditorStack;
  let dir: string;
  let store: MediaStore;
  let pictures: AssetPictures;
  const userId = newId('usr');
  const files: Record<string, string> = {};

  // The service waits 10 s; a machine shared with other tests may take longer, and the wait is not what these
  // cases check (the one that does sets it to 0).
  const picturesWith = (waitMs = 120_000) =>
    createAssetPictures({
      commands: stack.commands,
      assets: stack.repositories.assets,
      store,
      mediaUrl: (id) => MEDIA_URL + id,
      ffmpegPath: ffmpeg,
      ffprobePath: ffprobe,
      log: pino({ level: process.env.MF_TEST_LOG ?? 'silent' }),
      tmpDir: join(dir, 'scratch'),
      waitMs,
    });

  before(async () => {
    mongo = await startMongo();
    stack = await startEditorStack({ mongoUrl: mongo.uri, db: 'pictures' });
    dir = await mkdtemp(join(tmpdir(), 'mf-pictures-test-'));
    store = await createFsMediaStore({ dir: join(dir, 'media') });
    pictures = picturesWith();
    const colours = COLOURS.map(([name]) => `color=c=${name}:s=1280x720:r=30:d=1`);
    const strip = `${colours.map((source, i) => `${source}[c${i}]`).join(';')};${COLOURS.map((_, i) => `[c${i}]`).join('')}concat=n=${COLOURS.length}:v=1:a=0[v]`;
    const tone = (amplitude: string, seconds: number) =>
      `aevalsrc=${amplitude}*sin(2*PI*440*t):s=48000:d=${seconds}`;
    files.video = join(dir, 'colours.mp4');
    await ffmpegRun([
      ...['-filter_complex', strip, '-f', 'lavfi', '-i', tone('0.5', 5)],
      ...['-map', '[v]', '-map', '0:a', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'],
      ...['-c:a', 'aac', '-b:a', '192k', '-shortest', files.video],
    ]);
    // Past FILMSTRIP_ONE_PASS_MAX_SEC: its filmstrip is read by seeking, 26 s a colour.
    const longColours = COLOURS.map(([name]) => `color=c=${name}:s=320x180:r=5:d=26`);
    const longStrip = `${longColours.map((source, i) => `${source}[c${i}]`).join(';')};${COLOURS.map((_, i) => `[c${i}]`).join('')}concat=n=${COLOURS.length}:v=1:a=0[v]`;
    files.longVideo = join(dir, 'long.mp4');
    await ffmpegRun([
      ...['-filter_complex', longStrip, '-map', '[v]'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-pix_fmt', 'yuv420p', files.longVideo],
    ]);
    files.silentVideo = join(dir, 'silent.mp4');
    await ffmpegRun([
      ...['-f', 'lavfi', '-i', 'testsrc2=s=360x640:r=25:d=2'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', files.silentVideo],
    ]);
    files.steps = join(dir, 'steps.wav');
    await ffmpegRun([
      ...['-f', 'lavfi', '-i', `aevalsrc=if(lt(t\\,1)\\,0.25\\,0.75)*sin(2*PI*440*t):s=48000:d=2`],
      ...['-c:a', 'pcm_s16le', files.steps],
    ]);
    files.right = join(dir, 'right.wav');
    await ffmpegRun([
      ...['-f', 'lavfi', '-i', 'aevalsrc=0|0.6*sin(2*PI*1000*t):s=44100:d=1'],
      ...['-c:a', 'pcm_s16le', files.right],
    ]);
    files.tall = join(dir, 'tall.png');
    await ffmpegRun(['-f', 'lavfi', '-i', 'color=c=blue:s=1000x2000', '-frames:v', '1', files.tall]);
    files.small = join(dir, 'small.png');
    await ffmpegRun(['-f', 'lavfi', '-i', 'color=c=red:s=200x100', '-frames:v', '1', files.small]);
  });
  after(async () => {
    await pictures?.stop();
    await stack?.close();
    await mongo?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function newProject(): Promise<string> {
    const { project } = await stack.editor.createProject(userId, { aspect_ratio: '16:9' });
    return project.id;
  }

  /** Stores `file` and adds it as an asset through `using`'s commands; answers the asset as added. */
  async function addFile(
    projectId: string,
    file: string,
    kind: 'image' | 'video' | 'audio',
    contentType: string,
    using: AssetPictures = pictures,
  ): Promise<AssetView> {
    const mediaId = newMediaId(file.split('.').pop()!);
    await store.put(mediaId, await readFile(file), contentType);
    const { asset } = await using.commands.add_asset(projectId, {
      op_id: newId('op'),
      asset: {
        id: newId('va'),
        user_id: userId,
        kind,
        source: 'upload',
        media_id: mediaId,
        content_type: contentType,
        metadata: { name: 'x' },
      },
    });
    return asset as AssetView;
  }

  /** A picture's stored bytes and content type, by its URL. */
  async function fetchPicture(url: unknown): Promise<{ bytes: Buffer; contentType: string; path: string }> {
    assert.equal(typeof url, 'string');
    const id = (url as string).slice(MEDIA_URL.length);
    const stat = await store.stat(id);
    assert.ok(stat, `${id} is stored`);
    const bytes = await buffer(await store.open(id));
    const path = join(dir, `fetched-${id}`);
    await writeFile(path, bytes);
    return { bytes, contentType: stat.contentType, path };
  }

  /** A stored JPEG's size, as ffprobe decodes it. */
  async function jpegSize(url: unknown): Promise<{ width: number; height: number; path: string }> {
    const picture = await fetchPicture(url);
    assert.equal(picture.contentType, 'image/jpeg');
    assert.deepEqual([...picture.bytes.subarray(0, 3)], [0xff, 0xd8, 0xff], 'JPEG magic');
    const { streams } = await probeFile(picture.path);
    assert.equal(streams[0]!.codec_name, 'mjpeg');
    return { width: streams[0]!.width!, height: streams[0]!.height!, path: picture.path };
  }

  async function waveformOf(url: unknown): Promise<{ peaks_per_second: number; peaks: number[] }> {
    const picture = await fetchPicture(url);
    assert.equal(picture.contentType, 'application/json');
    return JSON.parse(picture.bytes.toString('utf8')) as { peaks_per_second: number; peaks: number[] };
  }

  /** Collects the project's events on the actors' bus until the returned stop is called. */
  function listen(projectId: string) {
    const events: ProjectEvent[] = [];
    const stop = stack.events.subscribe(actorTopic(PROJECT_ACTOR, projectId), (event) =>
      events.push(event as ProjectEvent),
    );
    return { events, stop };
  }

  it('gives a video with sound a poster, a filmstrip in time order and a waveform of its tone', async () => {
    const projectId = await newProject();
    const asset = await addFile(projectId, files.video!, 'video', 'video/mp4');
    const { metadata } = asset;
    assert.equal(metadata.name, 'x', 'what the asset had stays');
    assert.equal(metadata.has_sound, true);

    const poster = await jpegSize(metadata.poster_url);
    assert.deepEqual([poster.width, poster.height], [640, 360], 'longest side 640, shape kept');
    const [first] = await rgbFrames(poster.path, [0], poster.width, poster.height);
    assertColour(rgbAt(first!, poster.width, 320, 180), COLOURS[0]![1], 'the poster is the first frame');

    assert.equal(metadata.filmstrip_frames, 10);
    const strip = await jpegSize(metadata.filmstrip_url);
    assert.ok(strip.height <= 160);
    assert.equal(strip.height, 90);
    assert.equal(strip.width, 10 * 160, 'frames × frame width (16:9 at 90 px: 160)');
    const [row] = await rgbFrames(strip.path, [0], strip.width, strip.height);
    for (let frame = 0; frame < 10; frame += 1) {
      const colour = COLOURS[Math.floor(frame / 2)]!;
      assertColour(
        rgbAt(row!, strip.width, frame * 160 + 80, 45),
        colour[1],
        `frame ${frame} is ${colour[0]}`,
      );
    }

    const waveform = await waveformOf(metadata.waveform_url);
    assert.equal(waveform.peaks_per_second, 50);
    assert.ok(Math.abs(waveform.peaks.length - 250) <= 2, `${waveform.peaks.length} peaks for 5 s`);
    for (const peak of waveform.peaks) assert.ok(peak >= 0 && peak <= 1, `${peak} in 0..1`);
    const middle = waveform.peaks.slice(10, -10);
    for (const peak of middle)
      assert.ok(Math.abs(peak - 0.5) < 0.05, `${peak} ≈ 0.5 (the AAC tone's amplitude)`);
  });

  it("reads each waveform slice's largest sample: a step in amplitude, a tone on one channel only", async () => {
    const projectId = await newProject();
    const steps = await addFile(projectId, files.steps!, 'audio', 'audio/wav');
    assert.equal(steps.metadata.has_sound, true);
    assert.equal(steps.metadata.poster_url, undefined, 'audio has no poster');
    assert.equal(steps.metadata.filmstrip_url, undefined);
    const waveform = await waveformOf(steps.metadata.waveform_url);
    assert.equal(waveform.peaks_per_second, 50);
    assert.equal(waveform.peaks.length, 100);
    waveform.peaks
      .slice(0, 50)
      .forEach((peak, i) => assert.ok(Math.abs(peak - 0.25) < 0.002, `${i}: ${peak}`));
    waveform.peaks
      .slice(50)
      .forEach((peak, i) => assert.ok(Math.abs(peak - 0.75) < 0.002, `${50 + i}: ${peak}`));

    const right = await addFile(projectId, files.right!, 'audio', 'audio/wav');
    const stereo = await waveformOf(right.metadata.waveform_url);
    assert.equal(stereo.peaks_per_second, 50, '44 100 Hz: 882 samples a slice');
    assert.equal(stereo.peaks.length, 50);
    for (const peak of stereo.peaks)
      assert.ok(Math.abs(peak - 0.6) < 0.002, `${peak}: no mix-down halves it`);
  });

  it('gives an image a poster within 640 px, never enlarged, and no filmstrip or waveform', async () => {
    const projectId = await newProject();
    const tall = await addFile(projectId, files.tall!, 'image', 'image/png');
    assert.equal(tall.metadata.has_sound, false);
    assert.equal(tall.metadata.filmstrip_url, undefined);
    assert.equal(tall.metadata.filmstrip_frames, undefined);
    assert.equal(tall.metadata.waveform_url, undefined);
    const poster = await jpegSize(tall.metadata.poster_url);
    assert.deepEqual([poster.width, poster.height], [320, 640]);
    const small = await addFile(projectId, files.small!, 'image', 'image/png');
    const kept = await jpegSize(small.metadata.poster_url);
    assert.deepEqual([kept.width, kept.height], [200, 100]);
  });

  it(`takes a long video's filmstrip frames by seeking, still in time order`, async () => {
    const projectId = await newProject();
    const asset = await addFile(projectId, files.longVideo!, 'video', 'video/mp4');
    assert.ok(FILMSTRIP_ONE_PASS_MAX_SEC < 130);
    assert.equal(asset.metadata.filmstrip_frames, 10);
    const strip = await jpegSize(asset.metadata.filmstrip_url);
    assert.deepEqual([strip.width, strip.height], [10 * 160, 90]);
    const [row] = await rgbFrames(strip.path, [0], strip.width, strip.height);
    for (let frame = 0; frame < 10; frame += 1) {
      const colour = COLOURS[Math.floor(frame / 2)]!;
      assertColour(
        rgbAt(row!, strip.width, frame * 160 + 80, 45),
        colour[1],
        `frame ${frame} is ${colour[0]}`,
      );
    }
    assert.deepEqual(Object.values(await jpegSize(asset.metadata.poster_url)).slice(0, 2), [320, 180]);
  });

  it('gives a video without sound a poster and a filmstrip, and no waveform', async () => {
    const projectId = await newProject();
    const asset = await addFile(projectId, files.silentVideo!, 'video', 'video/mp4');
    assert.equal(asset.metadata.has_sound, false);
    assert.equal(asset.metadata.waveform_url, undefined);
    const poster = await jpegSize(asset.metadata.poster_url);
    assert.deepEqual([poster.width, poster.height], [360, 640]);
    const strip = await jpegSize(asset.metadata.filmstrip_url);
    assert.equal(asset.metadata.filmstrip_frames, 10);
    assert.deepEqual([strip.width, strip.height], [10 * 50, 90], '9:16 at 90 px high: 50 px a frame');
  });

  it('adds an asset without its pictures when they are late, then merges them with asset.updated', async () => {
    const late = picturesWith(0);
    try {
      const projectId = await newProject();
      const { events, stop } = listen(projectId);
      const asset = await addFile(projectId, files.small!, 'image', 'image/png', late);
      assert.equal(asset.metadata.poster_url, undefined, 'answered without waiting');
      const revision = (await stack.repositories.projects.get(projectId))!.revision;
      await until(
        'asset.updated',
        () => events.some((event) => event.type === 'asset.updated'),
        Boolean,
        30_000,
      );
      stop();
      const updated = events.find((event) => event.type === 'asset.updated')!;
      assert.equal(updated.video_id, null);
      assert.equal(updated.turn_id, null);
      assert.ok(!('revision' in updated.data), 'no revision: it is unchanged');
      const view = updated.data.asset as AssetView;
      assert.equal(view.id, asset.id);
      assert.equal(view.metadata.name, 'x');
      assert.equal(view.metadata.has_sound, false);
      await jpegSize(view.metadata.poster_url);
      const stored = (await stack.repositories.assets.get(asset.id))!;
      assert.deepEqual(stored.metadata, view.metadata);
      assert.equal((await stack.repositories.projects.get(projectId))!.revision, revision);
    } finally {
      await late.stop();
    }
  });

  it("makes an export's pictures after it is added", async () => {
    const projectId = await newProject();
    const videoId = (await stack.repositories.projects.get(projectId))!.videos[0]!.id;
    const { events, stop } = listen(projectId);
    const mediaId = newMediaId('mp4');
    await store.put(mediaId, await readFile(files.silentVideo!), 'video/mp4');
    const { asset } = await pictures.commands.export_completed(projectId, {
      op_id: newId('op'),
      video_id: videoId,
      export_id: newId('exp'),
      duration_sec: 2,
      asset: { id: newId('va'), user_id: userId, media_id: mediaId, metadata: { name: 'export' } },
    });
    assert.equal(asset.metadata.poster_url, undefined, 'the export does not wait');
    await until(
      'asset.updated',
      () => events.some((event) => event.type === 'asset.updated'),
      Boolean,
      30_000,
    );
    stop();
    const view = events.find((event) => event.type === 'asset.updated')!.data.asset as AssetView;
    assert.equal(view.id, asset.id);
    assert.equal(view.metadata.filmstrip_frames, 10);
    await jpegSize(view.metadata.filmstrip_url);
  });

  it('makes the pictures of an older asset when asked, once, announced by asset.updated', async () => {
    const projectId = await newProject();
    const mediaId = newMediaId('wav');
    await store.put(mediaId, await readFile(files.steps!), 'audio/wav');
    // Added straight through the actor, as before pictures existed.
    const { asset } = await stack.commands.add_asset(projectId, {
      op_id: newId('op'),
      asset: {
        id: newId('va'),
        user_id: userId,
        kind: 'audio',
        source: 'upload',
        media_id: mediaId,
        content_type: 'audio/wav',
        metadata: {},
      },
    });
    assert.deepEqual(asset.metadata, {});
    const { events, stop } = listen(projectId);
    const older = await stack.repositories.assets.listByProject(projectId);
    pictures.backfill(projectId, older);
    pictures.backfill(projectId, older); // a second read while they are made starts nothing more
    await until(
      'asset.updated',
      () => events.some((event) => event.type === 'asset.updated'),
      Boolean,
      30_000,
    );
    const done = await stack.repositories.assets.listByProject(projectId);
    assert.equal(done[0]!.metadata.has_sound, true);
    assert.equal((await waveformOf(done[0]!.metadata.waveform_url)).peaks.length, 100);
    pictures.backfill(projectId, done);
    await sleep(500);
    stop();
    assert.equal(events.filter((event) => event.type === 'asset.updated').length, 1, 'announced once');
  });

  it('makes them from a private copy when the store keeps no plain files (GridFS)', async () => {
    const scratch = join(dir, 'copies');
    const copying = createAssetPictures({
      commands: stack.commands,
      assets: stack.repositories.assets,
      store: { ...store, localPath: undefined },
      mediaUrl: (id) => MEDIA_URL + id,
      ffmpegPath: ffmpeg,
      ffprobePath: ffprobe,
      log: pino({ level: process.env.MF_TEST_LOG ?? 'silent' }),
      tmpDir: scratch,
      waitMs: 120_000,
    });
    try {
      const projectId = await newProject();
      const asset = await addFile(projectId, files.steps!, 'audio', 'audio/wav', copying);
      assert.equal((await waveformOf(asset.metadata.waveform_url)).peaks.length, 100);
      assert.deepEqual(await readdir(scratch), [], 'the copy went with its scratch folder');
    } finally {
      await copying.stop();
    }
  });

  it('adds an asset whose file gives no pictures, without them', async () => {
    const projectId = await newProject();
    const mediaId = newMediaId('mp4');
    await store.put(mediaId, Buffer.from('#EXTM3U\nhttp://127.0.0.1:1/x.ts\n'), 'video/mp4');
    const { asset } = await pictures.commands.add_asset(projectId, {
      op_id: newId('op'),
      asset: {
        id: newId('va'),
        user_id: userId,
        kind: 'video',
        source: 'upload',
        media_id: mediaId,
        content_type: 'video/mp4',
        metadata: {},
      },
    });
    assert.deepEqual(asset.metadata, {});
    assert.ok(await stack.repositories.assets.get(asset.id));
  });

  it('adds an asset that exists already as it is, without making its pictures again', async () => {
    const projectId = await newProject();
    const first = await addFile(projectId, files.small!, 'image', 'image/png');
    const record = (await stack.repositories.assets.get(first.id))!;
    const { id, user_id, kind, source, media_id, content_type } = record;
    const again = await pictures.commands.add_asset(projectId, {
      op_id: newId('op'),
      asset: { id, user_id, kind, source, media_id, content_type, metadata: {} },
    });
    assert.deepEqual(again.asset.metadata, first.metadata, 'the stored asset answers');
  });
});

function assertColour(
  actual: [number, number, number],
  expected: [number, number, number],
  what: string,
): void {
  const off = actual.map((value, i) => Math.abs(value - expected[i]!));
  assert.ok(Math.max(...off) <= 40, `${what}: ${actual.join(',')} vs ${expected.join(',')}`);
}
