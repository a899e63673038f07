// The export end to end (docs/editor.md, Export): the service as a process, real
// HTTP, sources made by ffmpeg at test time and uploaded, outputs downloaded through their `video_url` and
// measured with ffprobe and ffmpeg's own analysis filters (test/helpers/media-analysis.ts): duration to the
// frame, codecs and CFR, `+faststart` in the file's bytes, the five output sizes, black bars for `fit` (equal,
// and none for a near-same-ratio clip) and none for `fill` on decoded frames, a beep kept in place to the
// frame, music ducked under voice, −14 LUFS, a 5-clip mixed timeline with its sfx where it was put, the result
// as an asset, the `export.*` events, the stored result of an unchanged timeline, a client that goes away, and
// the fast path's copied packets.
//
// One service (single-node mode on a MongoDB-wire server owned by this file), EXPORT_RATE_PER_MINUTE high
// enough for every export here. Outputs that several checks read are exported once (`once`).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService } from '../helpers/service.ts';
import {
  editorClient,
  editorUser,
  withServiceLogs,
  type Asset,
  type EditorEvent,
  type ExportAnswer,
} from '../helpers/editor.ts';
import { openEventsSocket, type EventsSocket } from '../helpers/events-socket.ts';
import {
  bandLevel,
  barWidths,
  column,
  ffmpegRun,
  frameTimes,
  greyFrames,
  HIGH_BAND,
  integratedLoudness,
  isBlack,
  isPicture,
  LOW_BAND,
  soundSpans,
  probeFile,
  row,
  topLevelAtoms,
  videoPacketHashes,
} from '../helpers/media-analysis.ts';
import { sleep, until } from '../helpers/wait.ts';

const FPS = 30;
const FRAME = 1 / FPS;
/** Output sizes per aspect ratio (the export's aspect ratios: short side 720 px). */
const SIZES = {
  '9:16': [720, 1280],
  '1:1': [720, 720],
  '4:5': [720, 900],
  '16:9': [1280, 720],
  '4:3': [960, 720],
} as const;
type Ratio = keyof typeof SIZES;

/** Where the beep is in beep.mp4 (a 0.1 s 1 kHz tone, silence elsewhere). */
const BEEP_IN_SOURCE = 1;

/** A function run once, its promise shared by every test that needs its result. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let promise: Promise<T> | undefined;
  return () => (promise ??= make());
}

describe('export (the service as a process, real ffmpeg)', () => {
  let dir: string;
  const file = (name: string) => join(dir, name);
  let mongo: TestMongo;
  let service: RunningService;
  let token: string;
  let editor: ReturnType<typeof editorClient>;
  const sockets: EventsSocket[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mf-export-e2e-'));
    const make = (...args: string[]) => ffmpegRun(['-v', 'error', ...args]);
    const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-crf', '30', '-pix_fmt', 'yuv420p', '-r', '30'];
    const aac = ['-c:a', 'aac', '-ar', '48000', '-ac', '2'];
    const fixtures = [
      // 16:9, 2 s, 30 fps; its own audio is a 0.1 s 1 kHz beep at exactly 1.0 s, silence elsewhere.
      make(
        ...['-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=30:d=2'],
        ...['-f', 'lavfi', '-i', 'sine=f=1000:r=48000:d=0.1'],
        '-filter_complex',
        `[1:a]adelay=${BEEP_IN_SOURCE * 1000}|${BEEP_IN_SOURCE * 1000},apad,atrim=0:2,aformat=channel_layouts=stereo[a]`,
        ...['-map', '0:v', '-map', '[a]', ...x264, ...aac, '-t', '2'],
        file('beep.mp4'),
      ),
      // A square still (letterboxed in 9:16, cropped in 4:5).
      make(...['-f', 'lavfi', '-i', 'color=c=0x3080ff:s=400x400', '-frames:v', '1'], file('still.png')),
      // Nearly 16:9 (854×480: 719.4 rows at 1280 wide), 4:3 and 9:16, to place exactly in 16:9.
      make(
        ...[
          '-f',
          'lavfi',
          '-i',
          'color=c=0x3080ff:s=854x480:r=30:d=1',
          '-f',
          'lavfi',
          '-i',
          'anullsrc=r=48000',
        ],
        ...[...x264, ...aac, '-t', '1'],
        file('near-16x9.mp4'),
      ),
      make(...['-f', 'lavfi', '-i', 'color=c=0x3080ff:s=640x480', '-frames:v', '1'], file('four-three.png')),
      make(...['-f', 'lavfi', '-i', 'color=c=0x3080ff:s=360x640', '-frames:v', '1'], file('portrait.png')),
      // Voice-like: 600 Hz at speech level (lavfi's sine: −21 dBFS RMS); music: 150 Hz 6 dB under it; sfx: a
      // 0.3 s 4 kHz tone.
      make('-f', 'lavfi', '-i', 'sine=f=600:r=48000:d=4', file('voice.wav')),
      make('-f', 'lavfi', '-i', 'sine=f=150:r=48000:d=5,volume=0.5', file('music.wav')),
      make('-f', 'lavfi', '-i', 'sine=f=4000:r=48000:d=0.3', file('sfx.wav')),
      // Already in the 9:16 output's format: whole clips of these take the fast path.
      ...[
        ['fast1.mp4', 'testsrc2', 440],
        ['fast2.mp4', 'testsrc', 880],
      ].map(([name, source, hz]) =>
        make(
          ...['-f', 'lavfi', '-i', `${source}=s=720x1280:r=30:d=1.5`],
          ...['-f', 'lavfi', '-i', `sine=f=${hz}:r=48000:d=1.5`],
          ...x264,
          ...aac,
          '-shortest',
          file(String(name)),
        ),
      ),
    ];
    mongo = await startMongo();
    [service] = await Promise.all([
      startService({
        MONGO_URL: mongo.uri,
        MONGO_DB: 'export_e2e',
        RATE_LIMIT_PER_MINUTE: '1000000',
        EXPORT_RATE_PER_MINUTE: '1000',
        EXPORT_WORK_DIR: join(dir, 'work'),
      }),
      ...fixtures,
    ]);
    const user = await editorUser(service);
    token = user.token;
    editor = editorClient(() => service, token);
  });

  after(async () => {
    for (const socket of sockets) socket.ws.terminate();
    await service?.stop();
    await mongo?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const logged = <T>(body: () => Promise<T>) => withServiceLogs(() => [service], body);

  // ---- Setting up timelines through the API ----

  async function newProject(ratio: Ratio): Promise<{ projectId: string; videoId: string }> {
    const project = await editor.createProject({ name: `Export ${ratio}`, aspect_ratio: ratio });
    const state = await editor.state(project.id);
    assert.equal(state.status, 200);
    return { projectId: project.id, videoId: state.body.videos[0]!.id };
  }

  async function newVideo(projectId: string, ratio: Ratio): Promise<string> {
    const answer = await editor.send<{ video: { id: string; aspect_ratio: string } }>(
      'POST',
      `/${projectId}/videos`,
      { body: { aspect_ratio: ratio } },
    );
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.video.aspect_ratio, ratio);
    return answer.body.video.id;
  }

  const CONTENT_TYPES: Record<string, string> = { mp4: 'video/mp4', png: 'image/png', wav: 'audio/wav' };
  async function upload(projectId: string, name: string): Promise<Asset> {
    const type = CONTENT_TYPES[name.split('.').pop()!]!;
    const answer = await editor.upload(projectId, await readFile(file(name)), type);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body.asset;
  }

  async function addClip(projectId: string, body: Record<string, unknown>) {
    const answer = await editor.addClip(projectId, body);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body.clip;
  }

  /** The audio stream's duration (s), as ffprobe reads it. */
  const audioDuration = async (path: string) =>
    Number((await probeFile(path)).streams.find((s) => s.codec_type === 'audio')!.duration);

  const revisionOf = async (projectId: string) => (await editor.state(projectId)).body.project.revision;

  /** Downloads a `video_url` to a file of the test's folder. */
  async function download(url: string, name: string): Promise<string> {
    const response = await fetch(url);
    assert.equal(response.status, 200, `GET ${url}`);
    const path = file(name);
    writeFileSync(path, Buffer.from(await response.arrayBuffer()));
    return path;
  }

  /** Exports and expects a 200; answers the body, the wall time and the downloaded file. */
  async function exportOk(
    projectId: string,
    body: Record<string, unknown>,
    name: string,
  ): Promise<{ answer: ExportAnswer; ms: number; path: string }> {
    const started = performance.now();
    const answer = await editor.exportVideo(projectId, body);
    const ms = performance.now() - started;
    console.log(`export ${name}: ${answer.status} in ${Math.round(ms)} ms`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const exported = answer.body;
    assert.deepEqual(
      Object.keys(exported).sort(),
      ['asset_id', 'audio_overlay_count', 'duration_sec', 'video_clip_count', 'video_url'],
      'the documented export fields and nothing else',
    );
    assert.match(exported.asset_id, /^va_/);
    assert.ok(exported.video_url.startsWith(`${service.url}/media/`), exported.video_url);
    return { answer: exported, ms, path: await download(exported.video_url, name) };
  }

  /** Codecs, size, 30 fps CFR (every frame on the 1/30 grid), AAC 48 kHz stereo; the probed file. */
  async function assertFormat(path: string, [width, height]: readonly [number, number]) {
    const probed = await probeFile(path);
    const v = probed.streams.filter((s) => s.codec_type === 'video');
    const a = probed.streams.filter((s) => s.codec_type === 'audio');
    assert.equal(v.length, 1, 'one video stream');
    assert.equal(a.length, 1, 'one audio stream');
    assert.equal(probed.streams.length, 2, 'nothing else');
    assert.deepEqual(
      [v[0]!.codec_name, v[0]!.pix_fmt, v[0]!.width, v[0]!.height, v[0]!.r_frame_rate, v[0]!.avg_frame_rate],
      ['h264', 'yuv420p', width, height, '30/1', '30/1'],
    );
    assert.deepEqual([a[0]!.codec_name, a[0]!.sample_rate, a[0]!.channels], ['aac', '48000', 2]);
    const times = await frameTimes(path);
    assert.equal(times.length, Number(v[0]!.nb_frames), 'every frame decodes');
    for (const [i, t] of times.entries()) {
      assert.ok(Math.abs(t - times[0]! - i * FRAME) < 0.002, `frame ${i} at ${t} s: constant 30 fps`);
    }
    return { probed, frames: times.length };
  }

  // ---- The main timeline: a trimmed 16:9 video, a square image, the whole video, in 9:16 ----

  const TRIM = 0.5;
  const TRIMMED_DURATION = 1.5;
  const IMAGE_DURATION = 1;
  const main = once(async () => {
    const { projectId, videoId } = await newProject('9:16');
    const [video, image] = [await upload(projectId, 'beep.mp4'), await upload(projectId, 'still.png')];
    const wholeSec = Number(video.metadata.duration_sec);
    assert.ok(Math.abs(wholeSec - 2) < 0.05, `the source lasts ${wholeSec} s`);
    await addClip(projectId, {
      track: 'video',
      asset_id: video.id,
      trim_start_sec: TRIM,
      duration_sec: TRIMMED_DURATION,
    });
    await addClip(projectId, { track: 'video', asset_id: image.id, duration_sec: IMAGE_DURATION });
    await addClip(projectId, { track: 'video', asset_id: video.id });
    const revision = await revisionOf(projectId);
    const socket = await openEventsSocket(service.url, projectId, { token });
    sockets.push(socket);
    const exported = await exportOk(projectId, {}, 'main.mp4');
    return { projectId, videoId, revision, socket, wholeSec, ...exported };
  });
  const mainFill = once(async () => {
    const { projectId } = await main();
    return exportOk(projectId, { fit: 'fill' }, 'main-fill.mp4');
  });

  it('lasts Σ video clips to the frame, h264 yuv420p 30 fps CFR + AAC 48 kHz stereo, moov before mdat', () =>
    logged(async () => {
      const { answer, path, wholeSec, ms } = await main();
      const expected = TRIMMED_DURATION + IMAGE_DURATION + wholeSec;
      console.log(`main export (4.5 s of 720x1280): ${Math.round(ms)} ms; duration ${answer.duration_sec} s`);
      assert.equal(answer.video_clip_count, 3);
      assert.equal(answer.audio_overlay_count, 0);
      const { probed, frames } = await assertFormat(path, SIZES['9:16']);
      assert.ok(
        Math.abs(probed.durationSec - expected) <= FRAME,
        `container ${probed.durationSec} s, Σ ${expected}`,
      );
      assert.ok(Math.abs(frames / FPS - expected) <= FRAME, `${frames} frames for Σ ${expected} s`);
      assert.ok(Math.abs(answer.duration_sec - expected) <= FRAME, `answered ${answer.duration_sec} s`);
      const audio = probed.streams.find((s) => s.codec_type === 'audio')!;
      assert.ok(Math.abs(Number(audio.duration) - expected) <= FRAME, `audio lasts ${audio.duration} s`);

      const atoms = (await topLevelAtoms(path)).map((atom) => atom.type);
      const moov = atoms.indexOf('moov');
      const mdat = atoms.indexOf('mdat');
      assert.ok(moov >= 0 && mdat >= 0, `atoms ${atoms.join(',')}`);
      assert.ok(moov < mdat, `+faststart: moov before mdat (${atoms.join(',')})`);
    }));

  it('gives each of the five aspect ratios its size', () =>
    logged(async () => {
      const { projectId, videoId } = await newProject('9:16');
      const image = await upload(projectId, 'still.png');
      const videos: [Ratio, string][] = [['9:16', videoId]];
      for (const ratio of ['1:1', '4:5', '16:9', '4:3'] as const) {
        videos.push([ratio, await newVideo(projectId, ratio)]);
      }
      for (const [, id] of videos) {
        await addClip(projectId, { video_id: id, track: 'video', asset_id: image.id, duration_sec: 0.5 });
      }
      // One after the other: each export's wall time is then its own (logged).
      for (const [ratio, id] of videos) {
        const { answer, path } = await exportOk(
          projectId,
          { video_id: id },
          `ratio-${ratio.replace(':', 'x')}.mp4`,
        );
        const { frames } = await assertFormat(path, SIZES[ratio]);
        assert.equal(frames, 15, `${ratio}: 0.5 s is 15 frames`);
        assert.equal(answer.video_clip_count, 1);
        // The square still: bars on the long sides with fit (none in 1:1), picture in the middle.
        const [width, height] = SIZES[ratio];
        const [frame] = await greyFrames(path, [7], width, height);
        assert.ok(isPicture(row(frame!, width, height / 2)), `${ratio}: picture in the middle`);
        if (height > width) assert.ok(isBlack(row(frame!, width, 0)), `${ratio}: bar at the top`);
        else if (width > height)
          assert.ok(isBlack(column(frame!, width, height, 0)), `${ratio}: bar at the left`);
        else
          assert.ok(
            isPicture(row(frame!, width, 0)) && isPicture(column(frame!, width, height, 0)),
            '1:1 fills',
          );
      }
    }));

  it('`fit` leaves black bars above and below a 16:9 video and a square image in 9:16; `fill` none', () =>
    logged(async () => {
      const [width, height] = SIZES['9:16'];
      // Frames 20 (trimmed video), 60 (image), 120 (whole video).
      const fit = await greyFrames((await main()).path, [20, 60, 120], width, height);
      const [video1, still, video2] = fit as [Buffer, Buffer, Buffer];
      for (const [name, frame] of [
        ['video 1', video1],
        ['image', still],
        ['video 2', video2],
      ] as const) {
        for (const y of [0, 1, 100, 250, 1030, 1180, height - 2, height - 1])
          assert.ok(isBlack(row(frame, width, y)), `${name}: row ${y} is a bar`);
        assert.ok(isPicture(row(frame, width, height / 2)), `${name}: the middle is picture`);
        for (const x of [0, width - 1])
          assert.ok(!isBlack(column(frame, width, height, x)), `${name}: no bar at the side (column ${x})`);
      }
      // A 16:9 picture 720 wide is 405 rows high, centred: 437..842.
      for (const frame of [video1, video2]) {
        for (const y of [447, 640, 832])
          assert.ok(isPicture(row(frame, width, y)), `video row ${y} is picture`);
        for (const y of [420, 860]) assert.ok(isBlack(row(frame, width, y)), `video row ${y} is a bar`);
      }
      // The square image 720×720, centred: 280..999.
      for (const y of [290, 990]) assert.ok(isPicture(row(still, width, y)), `image row ${y} is picture`);
      for (const y of [265, 1015]) assert.ok(isBlack(row(still, width, y)), `image row ${y} is a bar`);

      const filled = await mainFill();
      await assertFormat(filled.path, SIZES['9:16']);
      const frames = await greyFrames(filled.path, [20, 60, 120], width, height);
      for (const [i, frame] of frames.entries()) {
        for (const y of [0, 1, height - 2, height - 1])
          assert.ok(!isBlack(row(frame, width, y)), `fill ${i}: row ${y} is no bar`);
        // Not a bar (some columns of testsrc2 are dark on average, but never black all the way down).
        for (const x of [0, 1, width - 2, width - 1])
          assert.ok(!isBlack(column(frame, width, height, x)), `fill ${i}: column ${x} is no bar`);
      }
    }));

  it('`fit` in 16:9: a near-16:9 video fills the frame, 4:3 and 9:16 images get equal side bars; `fill` none', () =>
    logged(async () => {
      const { projectId } = await newProject('16:9');
      for (const name of ['near-16x9.mp4', 'four-three.png', 'portrait.png']) {
        const asset = await upload(projectId, name);
        await addClip(projectId, { track: 'video', asset_id: asset.id, duration_sec: 0.5 });
      }
      const [width, height] = SIZES['16:9'];
      const middles = [7, 22, 37]; // 15 frames per clip
      const fit = await exportOk(projectId, { fit: 'fit' }, 'placed-fit.mp4');
      assert.equal((await assertFormat(fit.path, SIZES['16:9'])).frames, 45);
      const [near, fourThree, portrait] = await greyFrames(fit.path, middles, width, height);
      for (const y of [0, 1, height - 2, height - 1])
        assert.ok(isPicture(row(near!, width, y)), `854×480: row ${y} is picture`);
      assert.deepEqual(barWidths(near!, width, height), { top: 0, bottom: 0, left: 0, right: 0 });
      for (const [name, frame, exactWidth] of [
        ['4:3', fourThree!, 960],
        ['9:16', portrait!, 405],
      ] as const) {
        const bars = barWidths(frame, width, height);
        assert.deepEqual([bars.top, bars.bottom], [0, 0], `${name}: no bar above or below`);
        assert.ok(Math.abs(bars.left - bars.right) <= 1, `${name}: equal side bars ${JSON.stringify(bars)}`);
        const pictureWidth = width - bars.left - bars.right;
        assert.ok(Math.abs(pictureWidth - exactWidth) <= 2, `${name}: ${pictureWidth} px wide`);
      }

      const fill = await exportOk(projectId, { fit: 'fill' }, 'placed-fill.mp4');
      for (const [i, frame] of (await greyFrames(fill.path, middles, width, height)).entries()) {
        assert.deepEqual(
          barWidths(frame, width, height),
          { top: 0, bottom: 0, left: 0, right: 0 },
          `clip ${i}`,
        );
      }
    }));

  it("keeps a video clip's own beep in place to the frame, after a trim and after other clips", () =>
    logged(async () => {
      const { path } = await main();
      // Trimmed at 0.5 s: the beep (1.0 s in the file) at 0.5 s; the whole copy starts at 2.5 s: beep at 3.5 s.
      const expected = [BEEP_IN_SOURCE - TRIM, TRIMMED_DURATION + IMAGE_DURATION + BEEP_IN_SOURCE];
      const found = await soundSpans(path, await audioDuration(path));
      const offsets = found.map((span, i) => span.start - expected[i]!);
      console.log(
        `beeps ${JSON.stringify(found)} s, expected at ${JSON.stringify(expected)}: offsets ` +
          `${offsets.map((o) => `${(o * 1000).toFixed(1)} ms`).join(', ')}; loudness ${await integratedLoudness(path)} LUFS`,
      );
      assert.equal(found.length, 2, `two beeps, nothing else: ${JSON.stringify(found)}`);
      for (const [i, offset] of offsets.entries()) {
        assert.ok(Math.abs(offset) <= FRAME, `beep ${i} off by ${offset} s`);
        const length = found[i]!.end! - found[i]!.start;
        assert.ok(Math.abs(length - 0.1) <= FRAME, `beep ${i} lasts ${length} s`);
      }
    }));

  // ---- Sound: ducking and loudness, on an image-only picture in 1:1 ----

  const VOICE_START = 1.5;
  const VOICE_SEC = 1;
  const sound = once(async () => {
    const { projectId, videoId } = await newProject('1:1');
    const control = await newVideo(projectId, '1:1');
    const [image, music, voice] = [
      await upload(projectId, 'still.png'),
      await upload(projectId, 'music.wav'),
      await upload(projectId, 'voice.wav'),
    ];
    for (const id of [videoId, control]) {
      await addClip(projectId, { video_id: id, track: 'video', asset_id: image.id, duration_sec: 4 });
      await addClip(projectId, { video_id: id, track: 'music', asset_id: music.id, start_sec: 0 });
    }
    await addClip(projectId, {
      video_id: videoId,
      track: 'voice',
      asset_id: voice.id,
      start_sec: VOICE_START,
      duration_sec: VOICE_SEC,
    });
    const ducked = await exportOk(projectId, { video_id: videoId }, 'ducked.mp4');
    const alone = await exportOk(projectId, { video_id: control }, 'music-alone.mp4');
    return { ducked, alone };
  });

  it('ducks the music while voice plays (the music band measured with and without voice)', () =>
    logged(async () => {
      const { ducked, alone } = await sound();
      assert.equal(ducked.answer.audio_overlay_count, 2);
      assert.equal(alone.answer.audio_overlay_count, 1);
      await assertFormat(ducked.path, SIZES['1:1']);
      // Music alone 0.3..1.3 s; under the voice 1.7..2.4 s (after the attack, before the voice ends at 2.5 s).
      const level = async (path: string) => ({
        before: await bandLevel(path, LOW_BAND, 0.3, 1.3),
        under: await bandLevel(path, LOW_BAND, 1.7, 2.4),
      });
      const withVoice = await level(ducked.path);
      const control = await level(alone.path);
      const duck = withVoice.before - withVoice.under;
      const drift = control.before - control.under;
      console.log(
        `music band: ${withVoice.before} dB alone, ${withVoice.under} dB under voice (ducked ${duck.toFixed(1)} dB); ` +
          `control without voice: ${control.before} / ${control.under} dB (${drift.toFixed(1)} dB)`,
      );
      assert.ok(Number.isFinite(withVoice.under), 'the music still plays under the voice');
      assert.ok(Math.abs(drift) <= 1.5, `without voice the music stays level (${drift} dB)`);
      assert.ok(duck - drift >= 6, `music ducked by ${duck} dB under voice (control ${drift} dB)`);
    }));

  it('normalises the mix to −14 LUFS integrated (±1 LU)', () =>
    logged(async () => {
      const { ducked, alone } = await sound();
      const voiceAndMusic = await integratedLoudness(ducked.path);
      const musicOnly = await integratedLoudness(alone.path);
      console.log(`integrated loudness: voice+music ${voiceAndMusic} LUFS, music alone ${musicOnly} LUFS`);
      assert.ok(Math.abs(voiceAndMusic - -14) <= 1, `voice+music at ${voiceAndMusic} LUFS`);
      assert.ok(Math.abs(musicOnly - -14) <= 1, `music alone at ${musicOnly} LUFS`);
    }));

  it('exports a 5-clip image/video/voice/sfx/music timeline with the sfx where it was put', () =>
    logged(async () => {
      const SFX_AT = 2.4;
      const { projectId } = await newProject('4:5');
      const image = await upload(projectId, 'still.png');
      const video = await upload(projectId, 'beep.mp4');
      const voice = await upload(projectId, 'voice.wav');
      const sfx = await upload(projectId, 'sfx.wav');
      const music = await upload(projectId, 'music.wav');
      await addClip(projectId, { track: 'video', asset_id: image.id, duration_sec: 1 });
      await addClip(projectId, { track: 'video', asset_id: video.id });
      await addClip(projectId, { track: 'voice', asset_id: voice.id, start_sec: 0.5, duration_sec: 1.5 });
      await addClip(projectId, { track: 'sfx', asset_id: sfx.id, start_sec: SFX_AT });
      await addClip(projectId, { track: 'music', asset_id: music.id, start_sec: 0 });
      const { answer, path } = await exportOk(projectId, {}, 'mixed.mp4');
      const expected = 1 + Number(video.metadata.duration_sec);
      assert.equal(answer.video_clip_count, 2);
      assert.equal(answer.audio_overlay_count, 3);
      const { probed } = await assertFormat(path, SIZES['4:5']);
      assert.ok(
        Math.abs(probed.durationSec - expected) <= FRAME,
        `lasts ${probed.durationSec} s, Σ ${expected}`,
      );
      assert.ok(Math.abs(answer.duration_sec - expected) <= FRAME, `answered ${answer.duration_sec} s`);
      // The sfx (4 kHz) is the only sound above 2.5 kHz: it starts at SFX_AT and is far above the silence there.
      const spans = await soundSpans(path, await audioDuration(path), HIGH_BAND);
      // Cuts without fades click (a few ms of broadband sound where a clip starts or stops): only sounds of
      // 0.1 s or more count.
      const high = spans.filter((span) => (span.end ?? Infinity) - span.start >= 0.1);
      const sfxBefore = await bandLevel(path, HIGH_BAND, 1.4, 1.9);
      const sfxDuring = await bandLevel(path, HIGH_BAND, SFX_AT + 0.05, SFX_AT + 0.25);
      const loudness = await integratedLoudness(path);
      console.log(
        `mixed: sounds above 2.5 kHz ${JSON.stringify(spans)} (sfx expected at ${SFX_AT}), high band ${sfxBefore} dB before, ` +
          `${sfxDuring} dB during; loudness ${loudness} LUFS`,
      );
      assert.equal(high.length, 1, `one sound above 2.5 kHz: ${JSON.stringify(spans)}`);
      assert.ok(Math.abs(high[0]!.start - SFX_AT) <= FRAME, `sfx at ${high[0]!.start} s`);
      assert.ok(Math.abs(high[0]!.end! - high[0]!.start - 0.3) <= FRAME, `sfx lasts its 0.3 s`);
      assert.ok(sfxDuring > -30, `the sfx is audible (${sfxDuring} dB)`);
      assert.ok(Math.abs(loudness - -14) <= 1, `the mix at ${loudness} LUFS`);
      assert.ok(sfxDuring - sfxBefore >= 30, `the sfx stands out (${sfxDuring} vs ${sfxBefore} dB)`);
      // Music and voice are in there too (low and mid bands are not silent where they play).
      assert.ok((await bandLevel(path, LOW_BAND, 2.1, 2.9)) > -45, 'music under the picture');
    }));

  it("becomes an asset (source export, exported_from the video's revision), served as a ranged video/mp4", () =>
    logged(async () => {
      const { projectId, videoId, revision, answer } = await main();
      const state = await editor.state(projectId);
      assert.equal(state.status, 200);
      const asset = state.body.assets.find((a) => a.id === answer.asset_id);
      assert.ok(asset, `the export's asset is in the library: ${JSON.stringify(state.body.assets)}`);
      assert.equal(asset.kind, 'video');
      assert.equal(asset.source, 'export');
      assert.equal(asset.url, answer.video_url);
      const from = asset.metadata.exported_from as Record<string, unknown>;
      assert.equal(from.video_id, videoId);
      assert.equal(from.revision, revision, 'the revision the export rendered');
      assert.equal(
        state.body.project.revision,
        revision,
        'an export changes no timeline: the revision stays',
      );

      const whole = await fetch(answer.video_url);
      assert.equal(whole.status, 200);
      assert.equal(whole.headers.get('content-type'), 'video/mp4');
      assert.equal(whole.headers.get('accept-ranges'), 'bytes');
      const bytes = Buffer.from(await whole.arrayBuffer());
      assert.equal(bytes.equals(await readFile((await main()).path)), true);
      const ranged = await fetch(answer.video_url, { headers: { range: 'bytes=100-1123' } });
      assert.equal(ranged.status, 206);
      assert.equal(ranged.headers.get('content-range'), `bytes 100-1123/${bytes.length}`);
      assert.ok(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(100, 1124)), 'the asked bytes');
    }));

  it('announces export.started, export.progress, asset.created, export.completed (turn_id null, one export_id)', () =>
    logged(async () => {
      const { socket, answer, projectId, videoId } = await main();
      const events = await socket.waitFor('export.completed', (all) =>
        all.some((event) => event.type === 'export.completed'),
      );
      // The main export's events: from its export.started to its export.completed (a later export of this
      // project, with `fit: fill`, may follow).
      const first = events.findIndex((e) => e.type === 'export.started');
      const last = events.findIndex((e) => e.type === 'export.completed');
      assert.ok(first >= 0 && last > first, 'export.started, then export.completed');
      const ours = events.slice(first, last + 1);
      console.log(`main export events: ${ours.map((e) => `${e.seq}:${e.type}`).join(' ')}`);
      for (const event of ours) {
        assert.equal(event.turn_id, null, `${event.type}: turn_id null`);
        assert.equal(event.project_id, projectId);
        // The library is project-wide: asset.created has no video.
        assert.equal(event.video_id, event.type === 'asset.created' ? null : videoId, event.type);
      }
      const types = ours.map((e) => e.type);
      assert.equal(types[0], 'export.started');
      assert.deepEqual(types.slice(-2), ['asset.created', 'export.completed']);
      const progress = ours.filter((e) => e.type === 'export.progress');
      assert.ok(progress.length >= 1, 'a 4.5 s 720x1280 export reports progress');
      assert.deepEqual(
        [...new Set(types.slice(1, -2))],
        ['export.progress'],
        'only progress between start and the end',
      );
      for (let i = 1; i < ours.length; i++) assert.ok(ours[i]!.seq > ours[i - 1]!.seq, 'seq increases');
      let previous = 0;
      for (const event of progress) {
        const fraction = event.data.fraction as number;
        assert.ok(fraction > 0 && fraction <= 1, `fraction ${fraction}`);
        assert.ok(fraction >= previous, 'fractions do not go back');
        previous = fraction;
      }
      const exportId = ours[0]!.data.export_id;
      assert.equal(typeof exportId, 'string');
      for (const event of ours.filter((e) => e.type.startsWith('export.')))
        assert.equal(event.data.export_id, exportId, `${event.type}: the same export_id`);
      const created = ours.at(-2)! as EditorEvent;
      assert.equal((created.data.asset as Asset).id, answer.asset_id);
      const completed = ours.at(-1)!;
      assert.deepEqual(
        { ...completed.data, revision: undefined },
        {
          export_id: exportId,
          asset_id: answer.asset_id,
          video_url: answer.video_url,
          duration_sec: answer.duration_sec,
          revision: undefined,
        },
      );
    }));

  it('answers the stored asset at once for an unchanged (video, revision, fit); a new fit or an edit re-exports', () =>
    logged(async () => {
      const first = await main();
      const filled = await mainFill();
      assert.notEqual(filled.answer.asset_id, first.answer.asset_id, 'fill is another export');
      const again = await editor.exportVideo(first.projectId, {});
      const t0 = performance.now();
      const timed = await editor.exportVideo(first.projectId, { fit: 'fit' });
      const cachedMs = performance.now() - t0;
      const fillAgain = await editor.exportVideo(first.projectId, { fit: 'fill' });
      console.log(`cached export: ${cachedMs.toFixed(1)} ms vs ${first.ms.toFixed(0)} ms rendered`);
      for (const [answer, expected] of [
        [again, first.answer],
        [timed, first.answer],
        [fillAgain, filled.answer],
      ] as const) {
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        assert.deepEqual(answer.body, expected, 'the stored answer, the same asset');
      }
      assert.ok(cachedMs < first.ms / 5 && cachedMs < 500, `stored answer in ${cachedMs} ms`);
      // Asking again for the same export made no new asset.
      const assets = (await editor.state(first.projectId)).body.assets.filter((a) => a.source === 'export');
      assert.equal(assets.length, 2, 'one asset per (revision, fit)');

      // An edit bumps the revision: the next export is a new one (a small project, to stay quick).
      const { projectId } = await newProject('1:1');
      const image = await upload(projectId, 'still.png');
      const clip = await addClip(projectId, { track: 'video', asset_id: image.id, duration_sec: 0.5 });
      const before = await exportOk(projectId, {}, 'edit-before.mp4');
      const same = await editor.exportVideo(projectId, {});
      assert.equal(same.body.asset_id, before.answer.asset_id);
      const patched = await editor.patchClip(projectId, clip.id, { duration_sec: 0.6 });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      const revision = await revisionOf(projectId);
      const after = await exportOk(projectId, {}, 'edit-after.mp4');
      assert.notEqual(after.answer.asset_id, before.answer.asset_id, 'an edit makes a new export');
      assert.ok(
        Math.abs(after.answer.duration_sec - 0.6) <= FRAME,
        `the edited length ${after.answer.duration_sec}`,
      );
      const asset = (await editor.state(projectId)).body.assets.find((a) => a.id === after.answer.asset_id)!;
      assert.equal((asset.metadata.exported_from as { revision: number }).revision, revision);
    }));

  it('counts exports on /metrics: by outcome, and encoding seconds against the seconds of video made', () =>
    logged(async () => {
      const scrape = async () => {
        const response = await fetch(`${service.url}/metrics`, {
          headers: { authorization: `Bearer ${service.adminToken}` },
        });
        assert.equal(response.status, 200);
        const text = await response.text();
        return (series: string) => {
          const line = text.split('\n').find((one) => one.startsWith(`${series} `));
          return line === undefined ? 0 : Number(line.slice(series.length + 1));
        };
      };
      const before = await scrape();
      const { projectId } = await newProject('1:1');
      const image = await upload(projectId, 'still.png');
      await addClip(projectId, { track: 'video', asset_id: image.id, duration_sec: 0.5 });
      const made = await exportOk(projectId, {}, 'metrics.mp4');
      await exportOk(projectId, {}, 'metrics-again.mp4'); // unchanged: the stored export
      const after = await scrape();
      const delta = (series: string) => after(series) - before(series);
      assert.equal(delta('mf_exports_total{quality="final",outcome="completed"}'), 1);
      assert.equal(delta('mf_exports_total{quality="final",outcome="reused"}'), 1);
      const output = delta('mf_export_output_seconds_total{quality="final"}');
      assert.ok(Math.abs(output - made.answer.duration_sec) < 1e-6, `output seconds ${output}`);
      const encode = delta('mf_export_encode_seconds_total{quality="final"}');
      assert.ok(encode > 0 && encode < made.ms / 1000, `encode seconds ${encode} of ${made.ms} ms`);
    }));

  it('goes on when the client disconnects: the asset and export.completed still come', () =>
    logged(async () => {
      const { projectId } = await newProject('9:16');
      const video = await upload(projectId, 'beep.mp4');
      const image = await upload(projectId, 'still.png');
      await addClip(projectId, { track: 'video', asset_id: video.id });
      await addClip(projectId, { track: 'video', asset_id: image.id, duration_sec: 1 });
      const socket = await openEventsSocket(service.url, projectId, { token });
      sockets.push(socket);
      const abort = new AbortController();
      const request = fetch(`${service.url}/api/v1/media-studio/projects/${projectId}/export`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{}',
        signal: abort.signal,
      });
      await socket.waitFor('export.started', (all) => all.some((e) => e.type === 'export.started'));
      await sleep(200); // mid-export: the encode is under way
      abort.abort();
      await assert.rejects(request, { name: 'AbortError' });
      const exportsNow = (await editor.state(projectId)).body.assets.filter((a) => a.source === 'export');
      assert.equal(exportsNow.length, 0, 'the export was still running when the client went away');
      const state = await until(
        'the export asset',
        async () => (await editor.state(projectId)).body,
        (body) => body.assets.some((a) => a.source === 'export'),
        60_000,
        200,
      );
      const asset = state.assets.find((a) => a.source === 'export')!;
      const events = await socket.waitFor('export.completed', (all) =>
        all.some((e) => e.type === 'export.completed'),
      );
      assert.equal(events.find((e) => e.type === 'export.completed')!.data.asset_id, asset.id);
      assert.ok(!events.some((e) => e.type === 'export.failed'), 'not failed');
      const path = await download(asset.url, 'disconnected.mp4');
      const { probed } = await assertFormat(path, SIZES['9:16']);
      const expected = Number(video.metadata.duration_sec) + 1;
      assert.ok(Math.abs(probed.durationSec - expected) <= FRAME, `a whole export: ${probed.durationSec} s`);
    }));

  it('copies the video packets of whole clips already in the output format (fast path); a trim re-encodes', () =>
    logged(async () => {
      const { projectId, videoId } = await newProject('9:16');
      const reencoded = await newVideo(projectId, '9:16');
      const one = await upload(projectId, 'fast1.mp4');
      const two = await upload(projectId, 'fast2.mp4');
      for (const asset of [one, two])
        await addClip(projectId, { video_id: videoId, track: 'video', asset_id: asset.id });
      await addClip(projectId, { video_id: reencoded, track: 'video', asset_id: one.id });
      await addClip(projectId, { video_id: reencoded, track: 'video', asset_id: two.id, duration_sec: 1.4 });
      const fast = await exportOk(projectId, { video_id: videoId }, 'fast.mp4');
      const slow = await exportOk(projectId, { video_id: reencoded }, 'reencoded.mp4');
      console.log(`fast path ${fast.ms.toFixed(0)} ms, re-encode ${slow.ms.toFixed(0)} ms (3 s of 720x1280)`);

      const sources = [
        ...(await videoPacketHashes(file('fast1.mp4'))),
        ...(await videoPacketHashes(file('fast2.mp4'))),
      ];
      assert.equal(sources.length, 90);
      const copied = await videoPacketHashes(fast.path);
      assert.deepEqual(copied, sources, "the fast path's video packets are the sources' packets");
      const { probed } = await assertFormat(fast.path, SIZES['9:16']);
      assert.ok(Math.abs(probed.durationSec - 3) <= FRAME, `lasts ${probed.durationSec} s`);
      assert.equal(fast.answer.video_clip_count, 2);
      // Its sound is there: each source's own tone (440 Hz, then 880 Hz) is not silent.
      assert.ok(
        (await bandLevel(fast.path, 'lowpass=f=600,lowpass=f=600', 0.2, 1.3)) > -40,
        'first clip sound',
      );
      assert.ok(
        (await bandLevel(fast.path, 'highpass=f=700,highpass=f=700', 1.7, 2.8)) > -40,
        'second clip sound',
      );

      const again = await videoPacketHashes(slow.path);
      assert.equal(again.length, 45 + 42);
      const shared = again.filter((hash) => sources.includes(hash));
      assert.equal(shared.length, 0, 'a re-encode shares no packet with its sources');
      await assertFormat(slow.path, SIZES['9:16']);
    }));
});
