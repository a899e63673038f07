// Export errors end to end (docs/errors.md, Export errors: each error's trigger; docs/editor.md, Export;
// the `fit` message): the service as a process, real HTTP, real ffmpeg. Every export error is provoked the
// way it happens in production — a stored source overwritten, truncated or deleted in MEDIA_DIR, a source whose
// h264 samples after the first are zeroed (it probes fine, ffmpeg cannot decode it), EXPORT_WORK_DIR made
// unusable, MEDIA_DIR on a full tmpfs, a single-thread pool with a short EXPORT_TIMEOUT_MS — and each failing
// answer is checked for
// its status, its `error` code, a `message` that is safe text (no path, nothing of ffmpeg's output), no asset
// added, nothing left in the store, the `export.failed` event carrying the code, and a service that still
// exports afterwards. Also: `kill -9` of the service while its ffmpeg runs (the restarted service kills the
// orphan), and a source that is really an HLS or ffconcat playlist never makes ffmpeg open a URL or a file.
//
// One MongoDB-wire server; services per environment: `main` (generous limits), `rate`
// (EXPORT_RATE_PER_MINUTE=2), `full` (MEDIA_DIR on a small tmpfs), `slow` (EXPORT_CONCURRENCY=1,
// EXPORT_TIMEOUT_MS=6000) and `killed` (killed with SIGKILL and restarted on the same folders and database).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { pictureMediaIds } from '../../src/editor/asset-pictures.ts';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import {
  editorClient,
  editorUser,
  withServiceLogs,
  type Asset,
  type ProjectState,
} from '../helpers/editor.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type ApiAnswer, type RunningService } from '../helpers/service.ts';
import { sleep, until } from '../helpers/wait.ts';

const run = promisify(execFile);
const { ffmpeg } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});

const FIT_MESSAGE = 'fit must be one of fit, fill';
// Long enough that the 1 s export which checks the node still works fits in it on a loaded CI machine (2.5 s did
// not: a loaded run answered it 504), far shorter than the long export's encoding (about 20 s quiet).
const SLOW_TIMEOUT_MS = 6000;

/** One service under test, the environment it was started with and the folders it writes to. */
interface Node {
  name: string;
  service: RunningService;
  env: Record<string, string>;
  mediaDir: string;
  workDir: string;
}

type User = { userId: string; token: string };
type Client = ReturnType<typeof editorClient>;
type ExportBody = object & { error?: string; message?: string };

/** Every process whose command line contains `text` (zombies have none), read from /proc. */
function processesWith(text: string): { pid: number; argv: string[] }[] {
  const found: { pid: number; argv: string[] }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue;
    }
    if (argv.some((arg) => arg.includes(text))) found.push({ pid: Number(entry), argv });
  }
  return found;
}

/**
 * The export ffmpeg children of a service (not its ffprobe children): each works in
 * `<EXPORT_WORK_DIR>/exports/<id>/` — the render, a segment, the sound, the loudness pass, the join.
 */
const exportFfmpegs = (node: Pick<Node, 'workDir'>) =>
  processesWith(join(node.workDir, 'exports')).filter((proc) => basename(proc.argv[0] ?? '') === 'ffmpeg');

/** Whether `pid` is a running (not zombie) process. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

/** The media id of an asset: its `url` ends with it. */
const mediaIdOf = (asset: Pick<Asset, 'url'>) => asset.url.split('/').pop()!;

/** What the store folder holds (data files and sidecars), sorted. */
/** The per-export folders under `<EXPORT_WORK_DIR>/exports` (none when it is missing or not a folder). */
function exportFolders(node: Pick<Node, 'workDir'>): string[] {
  try {
    return readdirSync(join(node.workDir, 'exports'));
  } catch {
    return [];
  }
}

/**
 * The store's files, without the pictures of its files (docs/editor.md, Pictures of assets): those are made in
 * the background when a project is read, whatever an export does, so they may appear during any export.
 */
async function storeListing(node: Pick<Node, 'mediaDir'>, ignore: string[] = []): Promise<string[]> {
  // A picture being written is a `.tmp-` file until it is renamed: wait for writes in flight to end (a file the
  // export left half-written would never go, and fails here).
  const names = await until(
    'the store has no write in flight',
    () => readdirSync(node.mediaDir),
    (listing) => !listing.some((name) => name.startsWith('.tmp-')),
  );
  const pictures = names.flatMap((name) => Object.values(pictureMediaIds(name)));
  return names
    .filter((name) => !ignore.includes(name))
    .filter((name) => !pictures.some((picture) => name.startsWith(picture)))
    .sort();
}

describe('export errors, each provoked as in production, the service as a process', () => {
  let root: string;
  const fixture = (name: string) => join(root, name);
  let mongo: TestMongo;
  const nodes: Node[] = [];
  /** Export ffmpeg pids this file saw, killed in `after` should one still run (they are our services' children). */
  const seenPids = new Set<number>();
  let png: Buffer;
  let wav: Buffer;
  let mp4: Buffer;
  let noise: Buffer;
  let undecodable: Buffer;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'mf-export-errors-'));
    const make = (...args: string[]) =>
      run(ffmpeg, ['-hide_banner', '-nostdin', '-v', 'error', '-y', ...args]);
    const [mongoStarted] = await Promise.all([
      startMongo(),
      make('-f', 'lavfi', '-i', 'testsrc2=size=320x240', '-frames:v', '1', fixture('image.png')),
      make('-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=2', fixture('tone.wav')),
      make(
        ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25'],
        ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=2', '-t', '2'],
        ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest'],
        fixture('clip.mp4'),
      ),
      make(
        ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25', '-t', '2'],
        ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'],
        fixture('video-only.mp4'),
      ),
      // A still that is slow to encode once it moves: every pixel noise, 1280x720.
      make(
        ...['-f', 'lavfi', '-i', "nullsrc=s=1280x720,geq=lum='random(1)*255':cb=128:cr=128"],
        ...['-frames:v', '1', fixture('noise.png')],
      ),
    ]);
    mongo = mongoStarted;
    png = readFileSync(fixture('image.png'));
    wav = readFileSync(fixture('tone.wav'));
    mp4 = readFileSync(fixture('clip.mp4'));
    noise = readFileSync(fixture('noise.png'));
    undecodable = zeroMdat(readFileSync(fixture('video-only.mp4')));
    writeFileSync(fixture('undecodable.mp4'), undecodable);
    // The fixture is what the row needs: it probes as h264 with a duration, and ffmpeg exits non-zero on it.
    const probed = execFileSync(
      resolveFfmpeg({ ffprobePath: process.env.FFPROBE_PATH }).ffprobe,
      [
        '-v',
        'error',
        '-show_entries',
        'stream=codec_name:format=duration',
        '-of',
        'json',
        fixture('undecodable.mp4'),
      ],
      { encoding: 'utf8' },
    );
    assert.match(probed, /"h264"/);
    assert.match(probed, /"duration": "2\.0/);
    await assert.rejects(
      run(ffmpeg, ['-nostdin', '-v', 'quiet', '-i', fixture('undecodable.mp4'), '-f', 'null', '-']),
      (error: { code?: number }) => typeof error.code === 'number' && error.code !== 0,
      'ffmpeg fails on the zeroed mp4',
    );
  });

  after(async () => {
    await Promise.allSettled(nodes.map((node) => node.service.stop()));
    for (const pid of seenPids) {
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
    await mongo?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** Starts a service with its own MEDIA_DIR and EXPORT_WORK_DIR (unless given) and database. */
  async function startNode(name: string, env: Record<string, string> = {}): Promise<Node> {
    const mediaDir = env.MEDIA_DIR ?? mkdtempSync(join(root, `${name}-media-`));
    const workDir = env.EXPORT_WORK_DIR ?? mkdtempSync(join(root, `${name}-work-`));
    const fullEnv = {
      MONGO_URL: mongo.uri,
      MONGO_DB: `export_errors_${name}`,
      RATE_LIMIT_PER_MINUTE: '100000',
      EXPORT_RATE_PER_MINUTE: '1000',
      EXPORT_TIMEOUT_MS: '120000',
      ...env,
      MEDIA_DIR: mediaDir,
      EXPORT_WORK_DIR: workDir,
    };
    const node: Node = { name, service: await startService(fullEnv), env: fullEnv, mediaDir, workDir };
    nodes.push(node);
    return node;
  }

  const clientOf = (node: Node, user: User) => editorClient(() => node.service, user.token);

  /** A new project of `user` with the given video-track and audio clips (uploads made here). */
  async function timeline(
    node: Node,
    user: User,
    options: {
      aspect_ratio?: string;
      video?: { data: Buffer; type: string; duration_sec?: number; reuse?: boolean; motion?: string }[];
      audio?: { data: Buffer; type: string; track: string }[];
    },
  ): Promise<{ client: Client; projectId: string; videoId: string; assets: Asset[] }> {
    const client = clientOf(node, user);
    const project = await client.createProject(
      options.aspect_ratio ? { aspect_ratio: options.aspect_ratio } : {},
    );
    const state = await client.state(project.id);
    const videoId = state.body.videos[0]!.id;
    const assets: Asset[] = [];
    let last: Asset | undefined;
    for (const clip of options.video ?? []) {
      let asset = clip.reuse ? last : undefined;
      if (!asset) {
        const uploaded = await client.upload(project.id, clip.data, clip.type);
        assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
        asset = uploaded.body.asset;
        assets.push(asset);
      }
      last = asset;
      const added = await client.addClip(project.id, {
        track: 'video',
        asset_id: asset.id,
        ...(clip.duration_sec !== undefined ? { duration_sec: clip.duration_sec } : {}),
        ...(clip.motion !== undefined ? { motion: clip.motion } : {}),
      });
      assert.equal(added.status, 200, JSON.stringify(added.body));
    }
    for (const clip of options.audio ?? []) {
      const uploaded = await client.upload(project.id, clip.data, clip.type);
      assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
      assets.push(uploaded.body.asset);
      const added = await client.addClip(project.id, { track: clip.track, asset_id: uploaded.body.asset.id });
      assert.equal(added.status, 200, JSON.stringify(added.body));
    }
    return { client, projectId: project.id, videoId, assets };
  }

  /** The export assets of a project. */
  async function exportAssets(client: Client, projectId: string): Promise<Asset[]> {
    const state = await client.state(projectId);
    assert.equal(state.status, 200, JSON.stringify(state.body));
    return (state.body as ProjectState).assets.filter((asset) => asset.source === 'export');
  }

  /** A message safe for end users: text, no path, no name of a stored file, nothing of ffmpeg's output. */
  function assertSafeMessage(message: unknown, node: Node | undefined, what: string) {
    assert.equal(typeof message, 'string', `${what}: message is a string`);
    const text = message as string;
    assert.ok(text.length > 0, `${what}: message is not empty`);
    for (const dir of [root, tmpdir(), ...(node ? [node.mediaDir, node.workDir] : []), process.cwd()]) {
      assert.ok(!text.includes(dir), `${what}: message names no folder (${dir}): ${text}`);
    }
    assert.doesNotMatch(
      text,
      /(^|[\s'"(=:])\/[\w.-]+\/|[A-Za-z]:\\|file:/,
      `${what}: message has no path: ${text}`,
    );
    assert.doesNotMatch(
      text,
      /\bmed_[A-Za-z0-9]+|source-|output\.mp4|\bex_[A-Za-z0-9]{6,}/,
      `${what}: no file name: ${text}`,
    );
    assert.doesNotMatch(
      text,
      /ffmpeg|ffprobe|@ 0x|Invalid data|NAL unit|moov|Conversion failed|Error while|errno|E[A-Z]{3,}:|exit code|SIGKILL|\bat \w+ \(/i,
      `${what}: nothing of ffmpeg's output or a stack: ${text}`,
    );
  }

  /** `{ error: code, message }` with `status`, the message safe. */
  function assertExportError(
    answer: ApiAnswer<ExportBody>,
    status: number,
    code: string,
    node: Node,
    what = code,
  ) {
    assert.equal(answer.status, status, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
    assert.deepEqual(
      Object.keys(answer.body).sort(),
      ['error', 'message'],
      `${what}: ${JSON.stringify(answer.body)}`,
    );
    assert.equal(answer.body.error, code, JSON.stringify(answer.body));
    assertSafeMessage(answer.body.message, node, what);
  }

  /** The project's `export.failed` event with `code` (replayed from seq 0): `{ export_id, error }`, no turn. */
  async function assertFailedEvent(node: Node, user: User, projectId: string, videoId: string, code: string) {
    const socket = await openEventsSocket(node.service.url, projectId, { token: user.token, since: 0 });
    try {
      const events = await socket.waitFor(
        `export.failed with ${code}`,
        (seen) => seen.some((event) => event.type === 'export.failed' && event.data.error === code),
        10_000,
      );
      const failed = events.find((event) => event.type === 'export.failed' && event.data.error === code)!;
      assert.equal(failed.turn_id, null, JSON.stringify(failed));
      assert.equal(failed.video_id, videoId, JSON.stringify(failed));
      assert.match(String(failed.data.export_id), /\S/, JSON.stringify(failed));
      const started = events.find(
        (event) => event.type === 'export.started' && event.data.export_id === failed.data.export_id,
      );
      assert.ok(started && started.seq < failed.seq, `export.started comes first: ${JSON.stringify(events)}`);
      assert.ok(
        !events.some(
          (event) => event.type === 'export.completed' && event.data.export_id === failed.data.export_id,
        ),
        'a failed export is never announced as completed',
      );
      return failed;
    } finally {
      await socket.close();
    }
  }

  /** A 200 export, whose asset is in the project's library and whose mp4 is served. */
  async function assertExported(
    node: Node,
    client: Client,
    projectId: string,
    body: Record<string, unknown> = {},
  ) {
    const answer = await client.exportVideo(projectId, body);
    assert.equal(answer.status, 200, `export: ${answer.status} ${JSON.stringify(answer.body)}`);
    assert.deepEqual(Object.keys(answer.body).sort(), [
      'asset_id',
      'audio_overlay_count',
      'duration_sec',
      'video_clip_count',
      'video_url',
    ]);
    const assets = await exportAssets(client, projectId);
    assert.ok(
      assets.some((asset) => asset.id === answer.body.asset_id),
      'the export is an asset of the project',
    );
    const media = await fetch(answer.body.video_url);
    assert.equal(media.status, 200, answer.body.video_url);
    assert.ok((await media.arrayBuffer()).byteLength > 1000, 'the mp4 is served');
    return answer.body;
  }

  /**
   * The service still exports: a fresh project with a 1 s image clip. On the short time-out's node a loaded
   * machine may starve the (niced) ffmpeg past the deadline: a 504 ffmpeg_timeout means the export reached a
   * worker and encoded, so it is tried again (at most 4 times). A worker slot left taken would answer
   * export_timeout, and anything else fails at once.
   */
  async function assertStillWorks(node: Node, user: User) {
    const { client, projectId } = await timeline(node, user, {
      video: [{ data: png, type: 'image/png', duration_sec: 1 }],
    });
    for (let attempt = 1; attempt < 4; attempt++) {
      const answer = await client.exportVideo(projectId, {});
      if (answer.status === 200) return;
      assert.equal(
        answer.body.error,
        'ffmpeg_timeout',
        `export: ${answer.status} ${JSON.stringify(answer.body)}`,
      );
    }
    await assertExported(node, client, projectId);
  }

  /**
   * Runs a failing export of `projectId`: the error answer, no asset added, nothing new in the store, the
   * `export.failed` event; `ignore` names store entries the test itself changes.
   */
  async function assertFailingExport(
    node: Node,
    user: User,
    target: { client: Client; projectId: string; videoId: string },
    status: number,
    code: string,
    options: { body?: Record<string, unknown>; ignore?: string[]; event?: boolean; what?: string } = {},
  ) {
    const assetsBefore = await exportAssets(target.client, target.projectId);
    const storeBefore = await storeListing(node, options.ignore);
    const answer = await target.client.exportVideo(target.projectId, options.body ?? {});
    assertExportError(answer, status, code, node, options.what);
    assert.deepEqual(
      await exportAssets(target.client, target.projectId),
      assetsBefore,
      `${code}: no asset added`,
    );
    assert.deepEqual(
      await storeListing(node, options.ignore),
      storeBefore,
      `${code}: nothing new in MEDIA_DIR`,
    );
    if (options.event !== false) await assertFailedEvent(node, user, target.projectId, target.videoId, code);
    await until(
      `${code}: the export's work folder is removed`,
      () => exportFolders(node),
      (left) => left.length === 0,
      2000,
    );
    return answer;
  }

  // ---------------------------------------------------------------------------------------------------------
  describe('main service', () => {
    let node: Node;
    let owner: User;
    const logged = <T>(body: () => Promise<T>) => withServiceLogs(() => [node?.service], body);

    before(async () => {
      node = await startNode('main');
      owner = await editorUser(node.service);
    });

    it('400 no_video_clips: a video with only a voice clip, and one with no clip at all', () =>
      logged(async () => {
        const voiceOnly = await timeline(node, owner, {
          audio: [{ data: wav, type: 'audio/wav', track: 'voice' }],
        });
        await assertFailingExport(node, owner, voiceOnly, 400, 'no_video_clips', { event: false });
        const empty = await timeline(node, owner, {});
        await assertFailingExport(node, owner, empty, 400, 'no_video_clips', { event: false });
        await assertStillWorks(node, owner);
      }));

    it("400 fit: { error: 'fit must be one of fit, fill' } for 'stretch' and for 3, nothing exported", () =>
      logged(async () => {
        const target = await timeline(node, owner, {
          video: [{ data: png, type: 'image/png', duration_sec: 1 }],
        });
        for (const fit of ['stretch', 3, null, '']) {
          const answer = await target.client.exportVideo(target.projectId, { fit });
          assert.equal(answer.status, 400, `fit ${JSON.stringify(fit)}: ${JSON.stringify(answer.body)}`);
          assert.deepEqual(answer.body, { error: FIT_MESSAGE }, `fit ${JSON.stringify(fit)}`);
        }
        assert.deepEqual(await exportAssets(target.client, target.projectId), []);
        // The right values still export (fill as well as fit).
        await assertExported(node, target.client, target.projectId, { fit: 'fill' });
      }));

    it("404: unknown project, another user's project, unknown or foreign video_id — before the 400s", () =>
      logged(async () => {
        const mine = await timeline(node, owner, {
          video: [{ data: png, type: 'image/png', duration_sec: 1 }],
        });
        const other = await editorUser(node.service);
        const theirs = await timeline(node, other, {
          video: [{ data: png, type: 'image/png', duration_sec: 1 }],
        });
        const cases: [string, Client, string, Record<string, unknown>, string][] = [
          ['unknown project', mine.client, 'vp_doesnotexist0000', {}, 'Project not found'],
          [
            'unknown project, bad fit',
            mine.client,
            'vp_doesnotexist0000',
            { fit: 'stretch' },
            'Project not found',
          ],
          ["another user's project", mine.client, theirs.projectId, {}, 'Project not found'],
          ["another user's project, bad fit", mine.client, theirs.projectId, { fit: 3 }, 'Project not found'],
          [
            'unknown video_id',
            mine.client,
            mine.projectId,
            { video_id: 'vv_doesnotexist0000' },
            'Video not found',
          ],
          [
            'unknown video_id, bad fit',
            mine.client,
            mine.projectId,
            { video_id: 'vv_doesnotexist0000', fit: 'stretch' },
            'Video not found',
          ],
          [
            "another project's video_id",
            mine.client,
            mine.projectId,
            { video_id: theirs.videoId },
            'Video not found',
          ],
        ];
        for (const [what, client, projectId, body, error] of cases) {
          const answer = await client.exportVideo(projectId, body);
          assert.equal(answer.status, 404, `${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
          assert.equal(answer.body.error, error, `${what}: ${JSON.stringify(answer.body)}`);
          if (answer.body.message !== undefined) assertSafeMessage(answer.body.message, node, what);
        }
        assert.deepEqual(
          await exportAssets(theirs.client, theirs.projectId),
          [],
          'nothing exported of theirs',
        );
        await assertExported(node, mine.client, mine.projectId);
      }));

    for (const variant of ['garbage', 'truncated'] as const) {
      it(`422 corrupt_source: the stored source overwritten with ${variant}; repaired, it exports`, () =>
        logged(async () => {
          const target = await timeline(node, owner, { video: [{ data: mp4, type: 'video/mp4' }] });
          const path = join(node.mediaDir, mediaIdOf(target.assets[0]!));
          const original = readFileSync(path);
          assert.deepEqual(original, mp4, 'the store keeps the upload as a plain file named by its media id');
          writeFileSync(
            path,
            variant === 'garbage' ? randomBytes(original.length) : original.subarray(0, original.length >> 1),
          );
          await assertFailingExport(node, owner, target, 422, 'corrupt_source');
          writeFileSync(path, original);
          await assertExported(node, target.client, target.projectId);
        }));
    }

    it('500 ffmpeg_failed: an mp4 whose h264 samples after the key frame are zeros probes fine but does not decode', () =>
      logged(async () => {
        // Uploaded as it is when the upload probe accepts it, else written over an uploaded good source.
        const client = clientOf(node, owner);
        const project = await client.createProject({ aspect_ratio: '16:9' });
        const videoId = (await client.state(project.id)).body.videos[0]!.id;
        let asset: Asset;
        const direct = await client.upload(project.id, undecodable, 'video/mp4');
        if (direct.status === 200) asset = direct.body.asset;
        else {
          const good = await client.upload(project.id, readFileSync(fixture('video-only.mp4')), 'video/mp4');
          assert.equal(good.status, 200, JSON.stringify(good.body));
          asset = good.body.asset;
          writeFileSync(join(node.mediaDir, mediaIdOf(asset)), undecodable);
        }
        const added = await client.addClip(project.id, { track: 'video', asset_id: asset.id });
        assert.equal(added.status, 200, JSON.stringify(added.body));
        await assertFailingExport(
          node,
          owner,
          { client, projectId: project.id, videoId },
          500,
          'ffmpeg_failed',
        );
        assert.deepEqual(exportFfmpegs(node), [], 'no export ffmpeg left');
        // ffmpeg's own output is for the log only: it is there, with the exit code.
        const errorLines = node.service.lines.filter(
          (line) => /"level":50/.test(line) && /ffmpeg/i.test(line),
        );
        assert.ok(
          errorLines.some((line) => /"code":\s*\d+/.test(line) && /stderr/i.test(line)),
          `an error log line carries ffmpeg's exit and stderr:\n${errorLines.join('\n').slice(0, 2000)}`,
        );
        await assertStillWorks(node, owner);
      }));

    for (const variant of ['data file deleted, sidecar kept', 'data file and sidecar deleted'] as const) {
      it(`502 source_fetch_failed: ${variant}; restored, it exports`, () =>
        logged(async () => {
          const target = await timeline(node, owner, {
            video: [{ data: png, type: 'image/png', duration_sec: 1 }],
            audio: [{ data: wav, type: 'audio/wav', track: 'music' }],
          });
          const mediaId = mediaIdOf(target.assets[1]!);
          const data = join(node.mediaDir, mediaId);
          const sidecar = `${data}.meta.json`;
          const saved = { data: readFileSync(data), sidecar: readFileSync(sidecar) };
          unlinkSync(data);
          if (variant === 'data file and sidecar deleted') unlinkSync(sidecar);
          await assertFailingExport(node, owner, target, 502, 'source_fetch_failed', {
            ignore: [mediaId, `${mediaId}.meta.json`],
          });
          writeFileSync(data, saved.data);
          writeFileSync(sidecar, saved.sidecar);
          await assertExported(node, target.client, target.projectId);
        }));
    }

    describe('a source that is really a playlist never makes ffmpeg open a URL or a file', () => {
      let server: Server;
      let port = 0;
      const requests: string[] = [];
      before(async () => {
        server = createServer((request, response) => {
          requests.push(`${request.method} ${request.url}`);
          response.writeHead(200, { 'content-type': 'video/mp2t' });
          response.end(randomBytes(188 * 10));
        });
        server.on('connection', () => requests.push('connection'));
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        port = (server.address() as AddressInfo).port;
      });
      after(() => new Promise<void>((resolve) => server.close(() => resolve())));

      const playlists: Record<string, () => Buffer> = {
        'an HLS playlist': () =>
          Buffer.from(
            `#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n` +
              `#EXTINF:2.0,\nhttp://127.0.0.1:${port}/seg.ts\n#EXTINF:2.0,\nhttp://127.0.0.1:${port}/seg2.ts\n#EXT-X-ENDLIST\n`,
          ),
        'an ffconcat list of a URL': () =>
          Buffer.from(`ffconcat version 1.0\nfile 'http://127.0.0.1:${port}/x.mp4'\nduration 2\n`),
        'an ffconcat list of /etc/passwd': () =>
          Buffer.from(`ffconcat version 1.0\nfile '/etc/passwd'\nfile 'http://127.0.0.1:${port}/y.mp4'\n`),
        'an HLS playlist inside mp4 boxes': () => {
          const text = Buffer.from(
            `#EXTM3U\n#EXTINF:2.0,\nhttp://127.0.0.1:${port}/boxed.ts\n#EXT-X-ENDLIST\n`,
          );
          const ftyp = Buffer.concat([
            Buffer.from([0, 0, 0, 20]),
            Buffer.from('ftypisom\0\0\x02\0isom', 'latin1'),
          ]);
          const free = Buffer.alloc(8);
          free.writeUInt32BE(8 + text.length);
          free.write('free', 4, 'latin1');
          return Buffer.concat([ftyp, free, text]);
        },
      };
      for (const [what, content] of Object.entries(playlists)) {
        it(`422 corrupt_source for ${what} over a stored mp4, and no request made`, () =>
          logged(async () => {
            const target = await timeline(node, owner, { video: [{ data: mp4, type: 'video/mp4' }] });
            const path = join(node.mediaDir, mediaIdOf(target.assets[0]!));
            writeFileSync(path, content());
            await assertFailingExport(node, owner, target, 422, 'corrupt_source', { what });
            await sleep(200); // a wait for nothing: a late connection to the playlist's server must not come either
            assert.deepEqual(requests, [], `${what}: nothing connected to the playlist's server`);
            writeFileSync(path, mp4);
            await assertExported(node, target.client, target.projectId);
          }));
      }
    });

    // Last on this service: its work folder is broken on purpose (and repaired).
    it('500 export_failed: EXPORT_WORK_DIR/exports replaced by a regular file; repaired, it exports', () =>
      logged(async () => {
        const target = await timeline(node, owner, {
          video: [{ data: png, type: 'image/png', duration_sec: 1 }],
        });
        const exportsDir = join(node.workDir, 'exports');
        rmSync(exportsDir, { recursive: true, force: true });
        writeFileSync(exportsDir, 'not a folder');
        try {
          await assertFailingExport(node, owner, target, 500, 'export_failed');
        } finally {
          rmSync(exportsDir, { force: true });
          mkdirSync(exportsDir, { recursive: true });
        }
        await assertExported(node, target.client, target.projectId);
      }));
  });

  // ---------------------------------------------------------------------------------------------------------
  describe('EXPORT_RATE_PER_MINUTE=2', () => {
    let node: Node;
    before(async () => {
      node = await startNode('rate', { EXPORT_RATE_PER_MINUTE: '2' });
    });

    it('429 rate_limited with Retry-After on the third export within the minute (a cached re-export counts)', () =>
      withServiceLogs(
        () => [node.service],
        async () => {
          const user = await editorUser(node.service);
          const target = await timeline(node, user, {
            video: [{ data: png, type: 'image/png', duration_sec: 1 }],
          });
          const first = await assertExported(node, target.client, target.projectId);
          const second = await target.client.exportVideo(target.projectId, {});
          assert.equal(second.status, 200, JSON.stringify(second.body));
          assert.equal(
            second.body.asset_id,
            first.asset_id,
            'the unchanged timeline is answered from the stored export',
          );
          const assetsBefore = await exportAssets(target.client, target.projectId);
          const third = await target.client.exportVideo(target.projectId, {});
          assertExportError(third, 429, 'rate_limited', node);
          const retryAfter = third.headers.get('retry-after');
          assert.match(String(retryAfter), /^\d+$/, `Retry-After in seconds: ${retryAfter}`);
          assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After ${retryAfter}`);
          // A changed timeline is refused too: the limit is on exports, not on re-encodes.
          const more = await target.client.addClip(target.projectId, {
            track: 'video',
            asset_id: target.assets[0]!.id,
            duration_sec: 1,
          });
          assert.equal(more.status, 200);
          assertExportError(await target.client.exportVideo(target.projectId, {}), 429, 'rate_limited', node);
          assert.deepEqual(
            await exportAssets(target.client, target.projectId),
            assetsBefore,
            'no asset added',
          );
          // Per user: another user of the same service still exports.
          await assertStillWorks(node, await editorUser(node.service));
        },
      ));
  });

  // ---------------------------------------------------------------------------------------------------------
  describe('MEDIA_DIR on a full tmpfs', () => {
    let node: Node | undefined;
    let mountPoint: string;
    let mounted = false;
    let skipReason = '';
    before(async () => {
      mountPoint = mkdtempSync(join(root, 'tmpfs-media-'));
      try {
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mountPoint], { stdio: 'pipe' });
        mounted = true;
      } catch (error) {
        skipReason = `cannot mount a tmpfs (${String((error as Error).message).split('\n')[0]}): 503 storage_unconfigured not provoked`;
        console.log(skipReason);
        return;
      }
      node = await startNode('full', { MEDIA_DIR: mountPoint });
    });
    after(async () => {
      if (node) {
        await node.service.stop();
        nodes.splice(nodes.indexOf(node), 1);
      }
      if (mounted) execFileSync('umount', [mountPoint]);
    });

    it('503 storage_unconfigured: the store cannot take the result; with room again, it exports', (t) => {
      if (!node) {
        t.skip(skipReason);
        return;
      }
      const full = node;
      return withServiceLogs(
        () => [full.service],
        async () => {
          const user = await editorUser(full.service);
          const target = await timeline(full, user, {
            aspect_ratio: '16:9',
            video: [{ data: png, type: 'image/png', duration_sec: 2 }],
          });
          // Fill what is left of the tmpfs.
          const filler = join(mountPoint, 'filler');
          const fd = openSync(filler, 'w');
          const chunk = Buffer.alloc(64 * 1024, 1);
          try {
            for (;;) writeSync(fd, chunk);
          } catch (error) {
            assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
          }
          for (let size = 4096; size >= 1; size >>= 1) {
            try {
              writeSync(fd, chunk.subarray(0, size));
            } catch {
              // full
            }
          }
          closeSync(fd);
          await assertFailingExport(full, user, target, 503, 'storage_unconfigured', { ignore: ['filler'] });
          rmSync(filler);
          await assertExported(full, target.client, target.projectId);
        },
      );
    });
  });

  // ---------------------------------------------------------------------------------------------------------
  describe(`EXPORT_CONCURRENCY=1, EXPORT_TIMEOUT_MS=${SLOW_TIMEOUT_MS}`, () => {
    let node: Node;
    let user: User;
    before(async () => {
      node = await startNode('slow', {
        EXPORT_CONCURRENCY: '1',
        EXPORT_TIMEOUT_MS: String(SLOW_TIMEOUT_MS),
      });
      user = await editorUser(node.service);
    });
    const logged = <T>(body: () => Promise<T>) => withServiceLogs(() => [node.service], body);

    /**
     * A 16:9 timeline of 10 s noise stills that zoom in: every frame differs, so encoding it takes far longer
     * than the time-out (a still without motion is one frame held, which encodes in no time).
     */
    const long = (clips: number) =>
      timeline(node, user, {
        aspect_ratio: '16:9',
        video: Array.from({ length: clips }, (_, i) => ({
          data: noise,
          type: 'image/png',
          duration_sec: 10,
          reuse: i > 0,
          motion: 'zoom_in',
        })),
      });

    it('504 export_timeout for an export still queued behind a long one at its deadline (which gets ffmpeg_timeout)', () =>
      logged(async () => {
        // B is sent first but stages twelve sources; A, sent 100 ms later, stages one and takes the only thread.
        const queued = await timeline(node, user, {
          aspect_ratio: '16:9',
          video: Array.from({ length: 12 }, () => ({ data: png, type: 'image/png', duration_sec: 1 })),
        });
        const running = await long(3);
        const assetsBefore = [
          await exportAssets(queued.client, queued.projectId),
          await exportAssets(running.client, running.projectId),
        ];
        const storeBefore = await storeListing(node);
        const sentAt = Date.now();
        const queuedAnswer = queued.client.exportVideo(queued.projectId, {});
        await sleep(100); // sent after the queued one (nothing outside shows its arrival)
        const runningAnswer = running.client.exportVideo(running.projectId, {});
        const [b, a] = await Promise.all([queuedAnswer, runningAnswer]);
        const elapsed = Date.now() - sentAt;
        assertExportError(b, 504, 'export_timeout', node, 'the queued export');
        assertExportError(a, 504, 'ffmpeg_timeout', node, 'the running export');
        // At the deadlines, not once the long export would have finished (about 20 s of encoding).
        assert.ok(elapsed < SLOW_TIMEOUT_MS + 6000, `both answered soon after the deadline (${elapsed} ms)`);
        assert.deepEqual(
          [
            await exportAssets(queued.client, queued.projectId),
            await exportAssets(running.client, running.projectId),
          ],
          assetsBefore,
          'no asset added',
        );
        assert.deepEqual(await storeListing(node), storeBefore, 'nothing new in MEDIA_DIR');
        await until(
          'no export folder left',
          () => exportFolders(node),
          (left) => left.length === 0,
          2000,
        );
        await assertFailedEvent(node, user, queued.projectId, queued.videoId, 'export_timeout');
        await assertFailedEvent(node, user, running.projectId, running.videoId, 'ffmpeg_timeout');
        await until(
          'no export ffmpeg left',
          () => exportFfmpegs(node),
          (left) => left.length === 0,
          2000,
        );
        await assertStillWorks(node, user);
      }));

    it('504 ffmpeg_timeout: one export encoding longer than EXPORT_TIMEOUT_MS; its ffmpeg is gone within 2 s', () =>
      logged(async () => {
        const target = await long(3);
        const watching = { stop: false, pids: new Set<number>() };
        const watcher = (async () => {
          while (!watching.stop) {
            for (const proc of exportFfmpegs(node)) {
              watching.pids.add(proc.pid);
              seenPids.add(proc.pid);
            }
            await sleep(50);
          }
        })();
        const answer = await assertFailingExport(node, user, target, 504, 'ffmpeg_timeout');
        await until(
          'no ffmpeg of the export within 2 s of the answer',
          () => processesWith(node.workDir),
          (left) => left.length === 0,
          2000,
        );
        watching.stop = true;
        await watcher;
        assert.ok(watching.pids.size >= 1, 'an export ffmpeg was seen running');
        for (const pid of watching.pids) assert.ok(!alive(pid), `ffmpeg ${pid} is gone`);
        assert.equal(answer.body.error, 'ffmpeg_timeout');
        await assertStillWorks(node, user);
      }));
  });

  // ---------------------------------------------------------------------------------------------------------
  describe('kill -9 of the service mid-export', () => {
    let node: Node;
    before(async () => {
      node = await startNode('killed', { EXPORT_TIMEOUT_MS: '120000' });
    });

    it('the export ffmpeg dies with the killed service, and the restarted service works', () =>
      withServiceLogs(
        () => [node.service],
        async () => {
          const user = await editorUser(node.service);
          const target = await timeline(node, user, {
            aspect_ratio: '16:9',
            video: Array.from({ length: 3 }, (_, i) => ({
              data: noise,
              type: 'image/png',
              duration_sec: 10,
              reuse: i > 0,
              motion: 'zoom_in',
            })),
          });
          const pending = target.client.exportVideo(target.projectId, {}).then(
            (answer) => ({ answer }),
            (error: unknown) => ({ error }),
          );
          const [ffmpegProc] = await until(
            'the export ffmpeg runs',
            () => exportFfmpegs(node),
            (found) => found.length > 0,
            20_000,
          );
          const pid = ffmpegProc!.pid;
          seenPids.add(pid);
          await sleep(300); // mid-export: ffmpeg has been encoding a while
          node.service.proc.child.kill('SIGKILL');
          const exit = await node.service.proc.exited;
          assert.equal(exit.signal, 'SIGKILL');
          const outcome = await pending;
          assert.ok('error' in outcome, `the caller lost its connection: ${JSON.stringify(outcome)}`);
          // The kernel kills the export's ffmpeg with the service that started it (setpriv --pdeathsig):
          // nothing encodes on as an orphan. (Where setpriv is missing, the restart's sweep of the recorded
          // children is what kills it: test/integration/export-child-records.test.ts.)
          const killedAt = Date.now();
          await until(
            'the export ffmpeg to die with its service',
            () => alive(pid),
            (isAlive) => !isAlive,
            2000,
          );
          console.log(`export ffmpeg gone ${Date.now() - killedAt} ms after the kill`);

          // Restart on the same database, MEDIA_DIR and EXPORT_WORK_DIR: no ffmpeg of the old export runs.
          const restarted = await startService(node.env);
          node.service = restarted;
          assert.deepEqual(exportFfmpegs(node), []);
          await assertStillWorks(node, user);
        },
      ));
  });
});

/**
 * The mp4 with its `mdat` payload zeroed after the first sample (the key frame that ffprobe decodes to learn the
 * pixel format): the boxes, and so the probe, are unchanged; every later frame fails to decode, which makes
 * ffmpeg (5 and newer, `-max_error_rate` 2/3) exit non-zero. One video track, so its samples are contiguous.
 */
function zeroMdat(file: Buffer): Buffer {
  const out = Buffer.from(file);
  const stsz = out.indexOf('stsz', 0, 'latin1');
  if (stsz < 0) throw new Error('no stsz box in the fixture');
  const firstSample = out.readUInt32BE(stsz + 8) || out.readUInt32BE(stsz + 16);
  let offset = 0;
  let zeroed = false;
  while (offset + 8 <= out.length) {
    let size = out.readUInt32BE(offset);
    const type = out.toString('latin1', offset + 4, offset + 8);
    let header = 8;
    if (size === 1) {
      size = Number(out.readBigUInt64BE(offset + 8));
      header = 16;
    } else if (size === 0) size = out.length - offset;
    if (type === 'mdat') {
      out.fill(0, offset + header + firstSample, offset + size);
      zeroed = true;
    }
    offset += size;
  }
  if (!zeroed) throw new Error('no mdat box in the fixture');
  return out;
}
