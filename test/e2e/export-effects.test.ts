// The export's `quality` and its effects end to end (docs/editor.md, Previews; docs/errors.md, Export errors):
// the service as a process, real HTTP, real ffmpeg. A bad `quality` answers its 400 message; a preview is
// 360 px on its short side, marked `metadata.quality: "preview"`, stored apart from the final of the same
// timeline; and a service whose ffmpeg lacks `xfade` (an ffmpeg that is the real one but for its filter list,
// as the registry's 2018 fallback build) answers an export with a transition 422 `unsupported_feature` naming
// the filter and the effect, while it still exports a video without one.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { editorClient, editorUser, withServiceLogs, type Asset } from '../helpers/editor.ts';
import { probeFile } from '../helpers/media-analysis.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService } from '../helpers/service.ts';

const run = promisify(execFile);
const { ffmpeg } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});

describe('export effects and previews (service, real ffmpeg)', () => {
  let dir: string;
  let mongo: TestMongo;
  let full: RunningService;
  let lacking: RunningService;
  let clipFile: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'export-effects-e2e-'));
    clipFile = join(dir, 'clip.mp4');
    await run(ffmpeg, [
      ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=s=640x360:r=30:d=2'],
      ...['-f', 'lavfi', '-i', 'sine=f=440:r=48000:d=2', '-c:v', 'libx264', '-pix_fmt', 'yuv420p'],
      ...['-c:a', 'aac', '-shortest', clipFile],
    ]);
    // The real ffmpeg in every way but one: its filter list has no xfade.
    const withoutXfade = join(dir, 'ffmpeg-without-xfade');
    writeFileSync(
      withoutXfade,
      `#!/bin/sh\nfor a in "$@"; do [ "$a" = -filters ] && { "${ffmpeg}" "$@" | grep -v ' xfade '; exit 0; }; done\nexec "${ffmpeg}" "$@"\n`,
    );
    chmodSync(withoutXfade, 0o755);
    mongo = await startMongo();
    const env = (name: string) => ({
      MONGO_URL: mongo.uri,
      MONGO_DB: `export_effects_${name}`,
      RATE_LIMIT_PER_MINUTE: '1000000',
      EXPORT_RATE_PER_MINUTE: '1000',
      EXPORT_WORK_DIR: join(dir, `work-${name}`),
      MEDIA_DIR: join(dir, `media-${name}`),
    });
    [full, lacking] = await Promise.all([
      startService(env('full')),
      startService({ ...env('lacking'), FFMPEG_PATH: withoutXfade }),
    ]);
  });

  after(async () => {
    await Promise.all([full?.stop(), lacking?.stop()]);
    await mongo?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A 9:16 project on `service` with two video clips, the second with `second` fields. */
  async function timeline(service: RunningService, second: Record<string, unknown> = {}) {
    const user = await editorUser(service);
    const editor = editorClient(() => service, user.token);
    const project = await editor.createProject({ name: 'Effects', aspect_ratio: '9:16' });
    const uploaded = await editor.upload(project.id, readFileSync(clipFile), 'video/mp4');
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    const asset: Asset = uploaded.body.asset;
    for (const extra of [{}, second]) {
      const added = await editor.addClip(project.id, { track: 'video', asset_id: asset.id, ...extra });
      assert.equal(added.status, 200, JSON.stringify(added.body));
    }
    return { editor, projectId: project.id };
  }

  it('answers the quality message for anything but final or preview', () =>
    withServiceLogs(
      () => [full],
      async () => {
        const { editor, projectId } = await timeline(full);
        for (const quality of ['draft', null, 1, 'PREVIEW']) {
          const answer = await editor.exportVideo(projectId, { quality });
          assert.equal(answer.status, 400, JSON.stringify(answer.body));
          assert.deepEqual(answer.body, { error: 'quality must be one of final, preview' });
        }
      },
    ));

  it('renders a preview at 360 px, stored apart from the final of the same timeline', () =>
    withServiceLogs(
      () => [full],
      async () => {
        const { editor, projectId } = await timeline(full);
        const preview = await editor.exportVideo(projectId, { quality: 'preview' });
        assert.equal(preview.status, 200, JSON.stringify(preview.body));
        const final = await editor.exportVideo(projectId, { quality: 'final' });
        assert.equal(final.status, 200, JSON.stringify(final.body));
        assert.notEqual(preview.body.asset_id, final.body.asset_id);
        assert.equal(preview.body.duration_sec, final.body.duration_sec);
        const again = await editor.exportVideo(projectId, { quality: 'preview' });
        assert.equal(again.body.asset_id, preview.body.asset_id, 'the stored preview');
        const byDefault = await editor.exportVideo(projectId, {});
        assert.equal(byDefault.body.asset_id, final.body.asset_id, 'final is the default');

        const sizes = [];
        for (const answer of [preview, final]) {
          const path = join(dir, `${answer.body.asset_id}.mp4`);
          writeFileSync(path, Buffer.from(await (await fetch(answer.body.video_url)).arrayBuffer()));
          const video = (await probeFile(path)).streams.find((s) => s.codec_type === 'video')!;
          sizes.push([video.width, video.height]);
        }
        assert.deepEqual(sizes, [
          [360, 640],
          [720, 1280],
        ]);
        const state = await editor.state(projectId);
        const asset = (id: string) => state.body.assets.find((a) => a.id === id)!;
        assert.equal(asset(preview.body.asset_id).metadata.quality, 'preview');
        assert.equal(asset(final.body.asset_id).metadata.quality, 'final');
      },
    ));

  it('answers 422 unsupported_feature naming xfade when the ffmpeg lacks it, and still exports cuts', () =>
    withServiceLogs(
      () => [lacking],
      async () => {
        const transition = { transition_in: { type: 'fade', duration_sec: 0.5 } };
        const { editor, projectId } = await timeline(lacking, transition);
        const refused = await editor.exportVideo(projectId, {});
        assert.equal(refused.status, 422, JSON.stringify(refused.body));
        assert.equal(refused.body.error, 'unsupported_feature');
        assert.match(String(refused.body.message), /the xfade filter, which transitions need/);
        const plain = await timeline(lacking);
        const exported = await plain.editor.exportVideo(plain.projectId, {});
        assert.equal(exported.status, 200, JSON.stringify(exported.body));
        assert.ok(Math.abs(exported.body.duration_sec - 4) <= 1 / 30);
      },
    ));
});
