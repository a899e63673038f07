// Segmented exports end to end (docs/operator.md, The segment cache): the service as a process, real HTTP, real
// ffmpeg. One timeline with the effects of the timeline's second edition — a still with motion coming in from
// black, a sped-up video by a cross-fade, a cut, a wipe after it, a title over the wipe, faded music — is
// exported by a service that renders in segments (EXPORT_SEGMENTS=true) and by one that renders whole: the same
// frames within PSNR 40 dB, the same length, the sound in place. A re-export after trimming the last clip
// encodes only the one or two segments it changed (the service's own metrics say so) and still matches;
// a new title reuses the sound and encodes only the segments under it; deleting the project removes its cached
// segments, files and index.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { editorClient, editorUser, makeMedia, withServiceLogs, type Asset } from '../helpers/editor.ts';
import { ffmpeg, framePsnr, frameTimes, probeFile, soundSpans } from '../helpers/media-analysis.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { segmentCounters } from '../helpers/prometheus.ts';
import { startService, type RunningService } from '../helpers/service.ts';

const run = promisify(execFile);
const FRAME = 1 / 30;

describe('segmented exports (service, real ffmpeg)', () => {
  let dir: string;
  let mongo: TestMongo;
  let segmented: RunningService;
  let whole: RunningService;
  let clipFile: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'export-segments-e2e-'));
    clipFile = join(dir, 'clip.mp4');
    await run(ffmpeg, [
      ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=30:d=4'],
      ...['-f', 'lavfi', '-i', 'sine=f=440:r=48000:d=4', '-c:v', 'libx264', '-pix_fmt', 'yuv420p'],
      ...['-c:a', 'aac', '-shortest', clipFile],
    ]);
    mongo = await startMongo();
    const env = (name: string) => ({
      MONGO_URL: mongo.uri,
      MONGO_DB: `export_segments_${name}`,
      RATE_LIMIT_PER_MINUTE: '1000000',
      EXPORT_RATE_PER_MINUTE: '1000',
      EXPORT_WORK_DIR: join(dir, `work-${name}`),
      MEDIA_DIR: join(dir, `media-${name}`),
    });
    [segmented, whole] = await Promise.all([
      startService({ ...env('segmented'), EXPORT_SEGMENTS: 'true' }),
      startService({ ...env('whole'), EXPORT_SEGMENTS: 'false' }),
    ]);
  });

  after(async () => {
    await Promise.all([segmented?.stop(), whole?.stop()]);
    await mongo?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const logged = <T>(body: () => Promise<T>) => withServiceLogs(() => [segmented, whole], body);

  /** The same 16:9 timeline on `service`, every effect of the second edition; its editor and clips. */
  async function timeline(service: RunningService) {
    const user = await editorUser(service);
    const editor = editorClient(() => service, user.token);
    const project = await editor.createProject({ name: 'Segments', aspect_ratio: '16:9' });
    const upload = async (data: Buffer, type: string): Promise<Asset> => {
      const answer = await editor.upload(project.id, data, type);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body.asset;
    };
    const video = await upload(readFileSync(clipFile), 'video/mp4');
    const red = await upload(makeMedia('png', { colour: 'red' }), 'image/png');
    const blue = await upload(makeMedia('png', { colour: 'blue' }), 'image/png');
    const music = await upload(makeMedia('wav', { seconds: 8 }), 'audio/wav');
    const add = async (body: Record<string, unknown>) => {
      const answer = await editor.addClip(project.id, body);
      assert.equal(answer.status, 200, `${JSON.stringify(body)} → ${JSON.stringify(answer.body)}`);
      return answer.body.clip as { id: string };
    };
    const clips = [
      await add({
        track: 'video',
        asset_id: red.id,
        duration_sec: 1.5,
        motion: 'zoom_in',
        transition_in: { type: 'fadeblack', duration_sec: 0.5 },
      }),
      await add({
        track: 'video',
        asset_id: video.id,
        duration_sec: 2,
        speed: 1.5,
        transition_in: { type: 'fade', duration_sec: 0.5 },
      }),
      await add({ track: 'video', asset_id: blue.id, duration_sec: 1.5 }),
      await add({
        track: 'video',
        asset_id: video.id,
        duration_sec: 1.5,
        transition_in: { type: 'wipeleft', duration_sec: 0.5 },
      }),
    ];
    const title = await add({
      track: 'text',
      text: 'Over the cut',
      start_sec: 4,
      duration_sec: 1,
      fade_in_sec: 0.2,
    });
    await add({ track: 'music', asset_id: music.id, start_sec: 0.5, volume: 0.6, fade_out_sec: 1 });
    return { editor, projectId: project.id, clips, title };
  }

  /** Exports (200 expected) and downloads the file. */
  async function exported(editor: ReturnType<typeof editorClient>, projectId: string, name: string) {
    const answer = await editor.exportVideo(projectId, {});
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const path = join(dir, `${name}.mp4`);
    writeFileSync(path, Buffer.from(await (await fetch(answer.body.video_url)).arrayBuffer()));
    return { path, durationSec: answer.body.duration_sec as number };
  }

  /** Frame count, duration and per-frame PSNR of `path` against `reference`, and the music's onset in both. */
  async function assertSamePicture(path: string, reference: string, what: string) {
    const [frames, referenceFrames] = [await frameTimes(path), await frameTimes(reference)];
    assert.equal(frames.length, referenceFrames.length, `${what}: the same frame count`);
    const [probed, referenceProbed] = [await probeFile(path), await probeFile(reference)];
    assert.ok(
      Math.abs(probed.durationSec - referenceProbed.durationSec) <= FRAME,
      `${what}: ${probed.durationSec} s against ${referenceProbed.durationSec} s`,
    );
    const psnr = await framePsnr(path, reference);
    if (process.env.KEEP) {
      writeFileSync(`/tmp/seg-${what}.mp4`, readFileSync(path));
      writeFileSync(`/tmp/whole-${what}.mp4`, readFileSync(reference));
    }
    assert.equal(psnr.length, frames.length, `${what}: every frame compared`);
    console.log(
      what,
      psnr
        .map((v, i) => (v < 40 ? `${i}:${v.toFixed(1)}` : ''))
        .filter(Boolean)
        .join(' '),
    );
    const worst = Math.min(...psnr);
    assert.ok(worst >= 40, `${what}: the worst frame ${worst} dB (frame ${psnr.indexOf(worst)})`);
    // The sound in place: where the music (and the video's tone) is first heard, within one frame.
    const spans = (file: string, seconds: number) => soundSpans(file, seconds);
    const [sound, referenceSound] = [
      await spans(path, probed.durationSec),
      await spans(reference, referenceProbed.durationSec),
    ];
    assert.ok(sound.length > 0 && referenceSound.length > 0, `${what}: sound in both`);
    assert.ok(
      Math.abs(sound[0]!.start - referenceSound[0]!.start) <= FRAME,
      `${what}: the sound starts at ${sound[0]!.start} s against ${referenceSound[0]!.start} s`,
    );
    return worst;
  }

  let state: Awaited<ReturnType<typeof timeline>> | undefined;

  it('renders the timeline in segments, frame for frame as the whole render within PSNR 40 dB', () =>
    logged(async () => {
      state = await timeline(segmented);
      const reference = await timeline(whole);
      const before = await segmentCounters(segmented);
      const made = await exported(state.editor, state.projectId, 'segmented');
      const counts = await segmentCounters(segmented);
      assert.ok(counts.encoded - before.encoded >= 5, `segments encoded: ${JSON.stringify(counts)}`);
      assert.equal(counts.reused - before.reused, 0, 'nothing cached yet');
      assert.deepEqual(
        await segmentCounters(whole),
        { encoded: 0, reused: 0, soundsMixed: 0, soundsReused: 0 },
        'the whole render encodes none',
      );
      const wholeFile = await exported(reference.editor, reference.projectId, 'whole');
      assert.ok(Math.abs(made.durationSec - wholeFile.durationSec) <= FRAME, 'the same length');
      const worst = await assertSamePicture(made.path, wholeFile.path, 'first export');
      console.log(`segments: ${counts.encoded - before.encoded} encoded; worst frame ${worst.toFixed(2)} dB`);
    }));

  it('encodes only the one or two segments a trim changed when exported again, and still matches', () =>
    logged(async () => {
      assert.ok(state, 'the first test made the timeline');
      const reference = await timeline(whole);
      for (const [editor, projectId, clipId] of [
        [state.editor, state.projectId, state.clips[3]!.id],
        [reference.editor, reference.projectId, reference.clips[3]!.id],
      ] as const) {
        const trimmed = await editor.patchClip(projectId, clipId, { duration_sec: 1.2 });
        assert.equal(trimmed.status, 200, JSON.stringify(trimmed.body));
      }
      const before = await segmentCounters(segmented);
      const made = await exported(state.editor, state.projectId, 'segmented-trimmed');
      const after = await segmentCounters(segmented);
      const encoded = after.encoded - before.encoded;
      const reused = after.reused - before.reused;
      // The last clip's wipe and body (its length counts in both): nothing before them moved.
      assert.ok(encoded >= 1 && encoded <= 2, `segments encoded again: ${encoded}`);
      assert.ok(reused >= 3, `segments reused: ${reused}`);
      const wholeFile = await exported(reference.editor, reference.projectId, 'whole-trimmed');
      const worst = await assertSamePicture(made.path, wholeFile.path, 'after the trim');
      console.log(`after one trim: ${encoded} encoded, ${reused} reused; worst frame ${worst.toFixed(2)} dB`);
    }));

  it("reuses the sound when only a title's words change, and encodes only the segments under it", () =>
    logged(async () => {
      assert.ok(state, 'the first test made the timeline');
      const reference = await timeline(whole);
      for (const [editor, projectId, clipId] of [
        [state.editor, state.projectId, state.title.id],
        [reference.editor, reference.projectId, reference.title.id],
      ] as const) {
        const retitled = await editor.patchClip(projectId, clipId, { text: 'Over the wipe' });
        assert.equal(retitled.status, 200, JSON.stringify(retitled.body));
      }
      // The reference has the first test's trim too, so both render the same timeline.
      const trimmed = await reference.editor.patchClip(reference.projectId, reference.clips[3]!.id, {
        duration_sec: 1.2,
      });
      assert.equal(trimmed.status, 200, JSON.stringify(trimmed.body));
      const before = await segmentCounters(segmented);
      const made = await exported(state.editor, state.projectId, 'segmented-retitled');
      const after = await segmentCounters(segmented);
      const encoded = after.encoded - before.encoded;
      assert.ok(encoded >= 1 && encoded <= 3, `segments under the title encoded again: ${encoded}`);
      assert.ok(after.reused - before.reused >= 2, 'the other segments reused');
      assert.equal(after.soundsReused - before.soundsReused, 1, 'the sound is reused');
      assert.equal(after.soundsMixed - before.soundsMixed, 0, 'no sound mixed');
      const wholeFile = await exported(reference.editor, reference.projectId, 'whole-retitled');
      const worst = await assertSamePicture(made.path, wholeFile.path, 'after the new title');
      console.log(`after a new title: ${encoded} encoded, sound reused; worst frame ${worst.toFixed(2)} dB`);
    }));

  it("removes the project's cached segments, files and index, with the project", () =>
    logged(async () => {
      assert.ok(state, 'the first test made the timeline');
      const client = new MongoClient(mongo.uri);
      try {
        const index = client.db('export_segments_segmented').collection('export_segments');
        const entries = await index.find({ project_id: state.projectId }).toArray();
        assert.ok(entries.length >= 5, `cached segments: ${entries.length}`);
        const media = join(dir, 'media-segmented');
        const files = () => new Set(readdirSync(media, { recursive: true }).map(String));
        const beforeDelete = files();
        const cachedFiles = entries.map((entry) => String(entry.media_id));
        for (const name of cachedFiles) {
          assert.ok(
            [...beforeDelete].some((file) => file.endsWith(name)),
            `${name} is stored`,
          );
        }
        const deleted = await state.editor.send('DELETE', `/${state.projectId}`);
        assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
        assert.equal(await index.countDocuments({ project_id: state.projectId }), 0, 'no entry left');
        const afterDelete = files();
        for (const name of cachedFiles) {
          assert.ok(![...afterDelete].some((file) => file.endsWith(name)), `${name} is gone`);
        }
      } finally {
        await client.close();
      }
    }));
});
