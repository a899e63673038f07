// The video editor's edits end to end (docs/editor.md): plain edits through the
// builtin director, direct clip edits with If-Match, scopes and ownership. The service runs as a
// process with the sandbox provider (short timings); every call is real HTTP.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, adminClient, call, type ApiAnswer, type RunningService } from '../helpers/service.ts';
import { jobsClient } from '../helpers/jobs.ts';
import {
  accountClient,
  checkTurnAnswer,
  editorClient,
  editorUser,
  makeMedia,
  videoTrack,
  type ThreadMessage,
} from '../helpers/editor.ts';

const P = '/api/v1/media-studio/projects';

describe('editor edits', () => {
  let mongo: TestMongo;
  let service: RunningService;

  before(async () => {
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'editor_edits',
      SANDBOX_VIDEO_MS: '300',
      SANDBOX_IMAGE_MS: '200',
      PROVIDER_POLL_INTERVAL_MS: '200',
      PROVIDER_TIMEOUT_MS: '60000',
      RATE_LIMIT_PER_MINUTE: '100000',
    });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  async function setUp(options: { credits?: number; scopes?: string[] } = {}) {
    const user = await editorUser(service, options);
    const editor = editorClient(() => service, user.token);
    const account = accountClient(() => service, user.token);
    return { user, editor, account };
  }

  const stateOf = async (editor: ReturnType<typeof editorClient>, projectId: string) => {
    const answer = await editor.state(projectId);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body;
  };

  it('applies plain edits through instruct (remove, move, 16:9, a hosted image as scene 2, an uploaded wav as music), each for 5 credits and no job', async () => {
    const { editor, account } = await setUp();
    const project = await editor.createProject({ name: 'Edits' });
    const videoId = (await stateOf(editor, project.id)).videos[0]!.id;
    checkTurnAnswer(
      await editor.instruct(project.id, { instruction: 'a 3-scene video about a lighthouse at dawn' }),
      project.id,
    );
    for (let scene = 0; scene < 3; scene++) {
      const turn = await editor.instruct(project.id, { instruction: 'continue' });
      checkTurnAnswer(turn, project.id);
      assert.equal(turn.body.clips_created.length, 1, turn.body.assistant_text);
    }
    const [c1, c2, c3] = videoTrack(await stateOf(editor, project.id)).map((clip) => clip.id);

    /** One turn that edits: 200, 5 credits, no job, no media; its revisions end at the project's. */
    async function plainTurn(instruction: string, imageUrls?: string[]) {
      const [balance, jobs] = [await account.balance(), (await account.jobs()).length];
      const turn = await editor.instruct(project.id, {
        instruction,
        ...(imageUrls ? { image_urls: imageUrls } : {}),
      });
      const checked = checkTurnAnswer(turn, project.id);
      assert.equal(turn.body.media_gen_done, false, instruction);
      assert.equal(checked.mediaStarted.length, 0);
      assert.equal(checked.creditsCharged, 5);
      assert.equal(await account.balance(), balance - 5, `${instruction}: exactly 5 credits`);
      assert.equal((await account.jobs()).length, jobs, `${instruction}: no job`);
      const state = await stateOf(editor, project.id);
      const revisions = turn.body.agent_events.flatMap((event) =>
        typeof event.data.revision === 'number' ? [event.data.revision] : [],
      );
      assert.ok(revisions.length > 0, `${instruction} changed the project`);
      assert.equal(revisions.at(-1), state.project.revision);
      return { body: turn.body, state, types: turn.body.agent_events.map((event) => event.type) };
    }

    const removed = await plainTurn('remove clip 2');
    assert.deepEqual([removed.body.clips_created, removed.body.assets_created], [[], []]);
    assert.deepEqual(
      removed.body.agent_events
        .filter((event) => event.type === 'clip.removed')
        .map((event) => event.data.clip_id),
      [c2],
      'the second clip is the one removed',
    );
    assert.deepEqual(
      videoTrack(removed.state).map((clip) => [clip.id, clip.idx]),
      [
        [c1, 0],
        [c3, 1],
      ],
    );
    assert.equal(removed.state.assets.length, 3, 'the removed clip’s asset stays in the library');

    const moved = await plainTurn('move clip 2 to the start');
    assert.ok(moved.types.includes('clip.updated'));
    assert.deepEqual(
      videoTrack(moved.state).map((clip) => [clip.id, clip.idx]),
      [
        [c3, 0],
        [c1, 1],
      ],
    );

    const ratio = await plainTurn('make it 16:9');
    assert.deepEqual(ratio.body.aspect_ratio_changed, { video_id: videoId, from: '9:16', to: '16:9' });
    assert.ok(ratio.types.includes('aspect_ratio.changed'));
    assert.equal(ratio.state.videos.find((video) => video.id === videoId)?.aspect_ratio, '16:9');

    // An image the service hosts (a nano-banana job of another user); our own media URLs pass whatever
    // their scheme (docs/api.md, Input images and own-media URLs).
    const jobs = jobsClient(() => service);
    const painter = await jobs.account(1000, ['image:write']);
    const submitted = await jobs.submitImage(painter.token, {
      prompt: 'a red lighthouse',
      aspect_ratio: '16:9',
    });
    assert.equal(submitted.status, 202, JSON.stringify(submitted.body));
    const imageJob = await jobs.waitForEnd(painter.token, submitted.body.job_id as string);
    assert.equal(imageJob.status, 'completed', JSON.stringify(imageJob));
    const imageUrl = imageJob.result!.images![0]!;
    assert.ok(imageUrl.startsWith(`${service.url}/media/`));

    const added = await plainTurn('add the image as scene 2', [imageUrl]);
    assert.equal(added.body.assets_created.length, 1);
    const image = added.body.assets_created[0]!;
    assert.deepEqual([image.kind, image.source], ['image', 'import']);
    assert.equal(added.body.clips_created.length, 1);
    const imageClip = added.body.clips_created[0]!;
    assert.deepEqual([imageClip.track, imageClip.idx, imageClip.asset_id], ['video', 1, image.id]);
    assert.deepEqual(
      videoTrack(added.state).map((clip) => [clip.id, clip.idx]),
      [
        [c3, 0],
        [imageClip.id, 1],
        [c1, 2],
      ],
    );
    const imageFile = await fetch(image.url);
    assert.equal(imageFile.status, 200);
    assert.equal(imageFile.headers.get('content-type'), 'image/png');
    const thread = (await editor.messages(project.id, videoId)).body.messages as ThreadMessage[];
    const asked = thread.filter((message) => message.role === 'user').at(-1)!;
    assert.deepEqual([asked.text, asked.image_urls], ['add the image as scene 2', [imageUrl]]);

    const upload = await editor.upload(project.id, makeMedia('wav', { seconds: 2 }), 'audio/wav');
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    const audio = upload.body.asset;
    assert.deepEqual([audio.kind, audio.source], ['audio', 'upload']);
    assert.ok(Math.abs((audio.metadata.duration_sec as number) - 2) < 0.1, JSON.stringify(audio.metadata));

    const music = await plainTurn(`use ${audio.id} as music`);
    assert.deepEqual(music.body.assets_created, []);
    assert.equal(music.body.clips_created.length, 1);
    const musicClip = music.body.clips_created[0]!;
    assert.deepEqual(
      [musicClip.track, musicClip.idx, musicClip.asset_id, musicClip.video_id],
      ['music', 0, audio.id, videoId],
    );
    assert.deepEqual(
      music.state.clips.filter((clip) => clip.track === 'music').map((clip) => clip.id),
      [musicClip.id],
    );
    assert.equal(videoTrack(music.state).length, 3, 'the video track is untouched');
  });

  it('applies direct clip edits with a fresh If-Match, answers 409 with the revision to a stale one, and keeps ids inside their project', async () => {
    const { editor, account } = await setUp();
    const project = await editor.createProject({ name: 'Direct' });
    const image = (await editor.upload(project.id, makeMedia('png', { colour: 'blue' }), 'image/png')).body
      .asset;
    const audio = (await editor.upload(project.id, makeMedia('wav'), 'audio/wav')).body.asset;
    assert.deepEqual([image.kind, audio.kind], ['image', 'audio']);

    const other = await editor.createProject({ name: 'Other' });
    const otherImage = (await editor.upload(other.id, makeMedia('png'), 'image/png')).body.asset;
    const otherClip = (await editor.addClip(other.id, { track: 'video', asset_id: otherImage.id })).body.clip;
    const otherState = await stateOf(editor, other.id);

    let revision = (await stateOf(editor, project.id)).project.revision;
    const placed: string[] = [];
    for (let i = 0; i < 3; i++) {
      const added = await editor.addClip(
        project.id,
        { track: 'video', asset_id: image.id },
        { 'if-match': `"${revision}"` },
      );
      assert.equal(added.status, 200, JSON.stringify(added.body));
      assert.deepEqual([added.body.clip.idx, added.body.clip.track], [i, 'video']);
      assert.match(added.body.clip.id, /^vc_/);
      placed.push(added.body.clip.id);
      const now = (await stateOf(editor, project.id)).project.revision;
      assert.equal(now, revision + 1, 'each edit bumps the revision by one');
      revision = now;
    }
    assert.ok(revision >= 5, `revision ${revision}`);

    // A stale If-Match changes nothing, on every direct clip route.
    const before = await stateOf(editor, project.id);
    const stale = { 'if-match': '"1"' };
    const conflicts = [
      await editor.addClip(project.id, { track: 'video', asset_id: image.id }, stale),
      await editor.patchClip(project.id, placed[2]!, { idx: 0 }, stale),
      await editor.deleteClip(project.id, placed[0]!, stale),
    ] as unknown as ApiAnswer<{ error: unknown; revision: unknown }>[];
    for (const conflict of conflicts) {
      assert.equal(conflict.status, 409, JSON.stringify(conflict.body));
      assert.deepEqual(Object.keys(conflict.body).sort(), ['error', 'revision']);
      assert.equal(typeof conflict.body.error, 'string');
      assert.equal(conflict.body.revision, revision);
    }
    assert.deepEqual(await stateOf(editor, project.id), before);

    // PATCH with a fresh If-Match (unquoted) moves the clip.
    const patched = await editor.patchClip(
      project.id,
      placed[2]!,
      { idx: 0 },
      { 'if-match': String(revision) },
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(patched.body.clip.idx, 0);
    let state = await stateOf(editor, project.id);
    assert.equal(state.project.revision, revision + 1);
    assert.deepEqual(
      videoTrack(state).map((clip) => clip.id),
      [placed[2], placed[0], placed[1]],
    );

    // DELETE closes up the track.
    const deleted = await editor.deleteClip(project.id, placed[0]!);
    assert.deepEqual([deleted.status, deleted.body], [200, { id: placed[0], deleted: true }]);
    state = await stateOf(editor, project.id);
    assert.deepEqual(
      videoTrack(state).map((clip) => [clip.id, clip.idx]),
      [
        [placed[2], 0],
        [placed[1], 1],
      ],
    );
    assert.equal(state.project.revision, revision + 2);

    // Ids of another project are not found here, and the other project is untouched.
    const foreign = [
      await editor.patchClip(project.id, otherClip.id, { idx: 0 }),
      await editor.deleteClip(project.id, otherClip.id),
      await editor.addClip(project.id, { track: 'video', asset_id: otherImage.id }),
      await editor.addClip(project.id, {
        track: 'video',
        asset_id: image.id,
        video_id: otherState.videos[0]!.id,
      }),
    ];
    for (const answer of foreign) assert.equal(answer.status, 404, JSON.stringify(answer.body));
    assert.deepEqual(await stateOf(editor, other.id), otherState);

    // A video of another project in instruct: 404 before the body is checked, nothing charged.
    const balance = await account.balance();
    for (const instruction of ['', 'make it 16:9']) {
      const answer = await editor.instruct(project.id, { video_id: otherState.videos[0]!.id, instruction });
      assert.equal(answer.status, 404, JSON.stringify(answer.body));
    }
    assert.equal(await account.balance(), balance);

    // Wrong track for the asset kind: 400 and nothing placed.
    const wrong = [
      await editor.addClip(project.id, { track: 'video', asset_id: audio.id }),
      await editor.addClip(project.id, { track: 'music', asset_id: image.id }),
    ];
    for (const answer of wrong) assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.deepEqual(await stateOf(editor, project.id), state);

    // An audio clip on its own track is fine.
    const music = await editor.addClip(project.id, { track: 'music', asset_id: audio.id });
    assert.deepEqual([music.status, music.body.clip?.track, music.body.clip?.idx], [200, 'music', 0]);
    assert.equal(await account.balance(), balance, 'direct edits are free');
  });

  it('creates projects with a "Main video", lists only the user’s own, enforces the read/write scopes, hides other users’ projects (404) and deletes', async () => {
    const { editor } = await setUp();
    const created = await editor.send<{ project: Record<string, unknown> }>('POST', '', { body: {} });
    assert.equal(created.status, 200);
    const project = created.body.project;
    assert.match(project.id as string, /^vp_/);
    assert.deepEqual(
      [project.name, project.aspect_ratio, project.context_md],
      ['Untitled project', '9:16', ''],
    );
    for (const field of ['created_at', 'updated_at'])
      assert.ok(!Number.isNaN(Date.parse(project[field] as string)));
    const id = project.id as string;
    const state = await stateOf(editor, id);
    assert.equal(state.project.context_md, '');
    assert.deepEqual(
      state.videos.map((video) => [video.name, video.aspect_ratio]),
      [['Main video', '9:16']],
    );
    assert.match(state.videos[0]!.id, /^vv_/);
    assert.deepEqual([state.assets, state.clips], [[], []]);
    const second = await editor.createProject({ name: 'Square', aspect_ratio: '1:1' });

    // Another user sees none of it.
    const stranger = await setUp();
    await stranger.editor.createProject({ name: 'Mine' });
    const listed = await editor.send<{ projects: Record<string, unknown>[] }>('GET', '');
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.projects.map((one) => Object.keys(one).sort()),
      [
        ['aspect_ratio', 'id', 'name', 'updated_at'],
        ['aspect_ratio', 'id', 'name', 'updated_at'],
      ],
    );
    assert.deepEqual(
      listed.body.projects.map((one) => [one.id, one.name, one.aspect_ratio]).sort(),
      [
        [id, 'Untitled project', '9:16'],
        [second.id, 'Square', '1:1'],
      ].sort(),
    );

    const videoId = state.videos[0]!.id;
    const upload = { rawBody: makeMedia('wav'), headers: { 'content-type': 'audio/wav' } };
    const routes: [string, string, Parameters<typeof editor.send>[2]?][] = [
      ['GET', `/${id}`],
      ['PATCH', `/${id}`, { body: { name: 'stolen' } }],
      ['POST', `/${id}/videos`, { body: {} }],
      ['PATCH', `/${id}/videos/${videoId}`, { body: { name: 'stolen' } }],
      ['GET', `/${id}/videos/${videoId}/messages`],
      ['POST', `/${id}/assets`, upload],
      ['POST', `/${id}/clips`, { body: { track: 'video', asset_id: 'va_nothing' } }],
      ['PATCH', `/${id}/clips/vc_nothing`, { body: { idx: 0 } }],
      ['DELETE', `/${id}/clips/vc_nothing`],
      ['POST', `/${id}/instruct`, { body: { instruction: 'make it 16:9' } }],
      ['POST', `/${id}/instruct`, { body: { instruction: '' } }],
      ['DELETE', `/${id}`],
    ];
    for (const [method, path, options] of routes) {
      const answer = await stranger.editor.send(method, path, options);
      assert.equal(answer.status, 404, `${method} ${path}: ${JSON.stringify(answer.body)}`);
      assert.equal(typeof (answer.body as { error?: unknown }).error, 'string');
    }
    assert.equal(await stranger.account.balance(), 100_000);
    assert.deepEqual(await stateOf(editor, id), state, 'the owner’s project is untouched');

    // Scopes: read-only keys read, never write (403); a key without editor scopes cannot read either.
    const reader = await setUp({ scopes: ['video-editor:read'] });
    const readOnly = editorClient(() => service, reader.user.token);
    assert.equal((await readOnly.send('GET', '')).status, 200);
    assert.equal((await readOnly.send('POST', '', { body: { name: 'no' } })).status, 403);
    // The reader owns no project: give it one through a writer of the same user.
    const writerKey = await adminClient(service).createKey(reader.user.userId, ['video-editor:write']);
    const own = await editorClient(() => service, writerKey.apiKey).createProject({ name: 'Shared' });
    const ownState = await readOnly.state(own.id);
    assert.equal(ownState.status, 200);
    assert.equal((await readOnly.messages(own.id, ownState.body.videos[0]!.id)).status, 200);
    for (const [method, path, options] of [
      ['POST', `/${own.id}/instruct`, { body: { instruction: 'make it 16:9' } }],
      ['POST', `/${own.id}/clips`, { body: { track: 'video', asset_id: 'va_x' } }],
      ['DELETE', `/${own.id}`],
    ] as const) {
      const answer = await readOnly.send(method, path, options as Parameters<typeof editor.send>[2]);
      assert.equal(answer.status, 403, `${method} ${path}`);
    }
    assert.equal(await reader.account.balance(), 100_000);
    const writeOnly = editorClient(() => service, writerKey.apiKey);
    assert.equal((await writeOnly.send('GET', '')).status, 403, 'reading needs video-editor:read');
    const noKey = await call(service.url, 'GET', P);
    assert.equal(noKey.status, 401);

    // Delete: then gone everywhere.
    const removed = await editor.send('DELETE', `/${id}`);
    assert.deepEqual([removed.status, removed.body], [200, { id, deleted: true }]);
    assert.equal((await editor.state(id)).status, 404);
    assert.equal((await editor.send('DELETE', `/${id}`)).status, 404);
    assert.equal((await editor.messages(id, videoId)).status, 404);
    const after = (await editor.send<{ projects: { id: string }[] }>('GET', '')).body.projects;
    assert.deepEqual(
      after.map((one) => one.id),
      [second.id],
    );
  });
});
