// The timeline's second edition over REST against the running service (docs/editor.md, Text, transitions,
// motion, speed, fades): every kind of clip with every field, read back through the state and the events; each
// validation message once, answered 400 with nothing changed; transitions re-checked when a neighbour changes;
// the timeline's bound with overlaps and speed; If-Match; and a clip stored before the edition reading its
// defaults.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService } from '../helpers/service.ts';
import {
  editorClient,
  editorUser,
  makeMedia,
  makeVideo,
  type Asset,
  type Clip,
  type ProjectState,
} from '../helpers/editor.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';

const DB = 'editor_timeline_v2';
const TIMELINE_MAX_SEC = 40;
type Editor = ReturnType<typeof editorClient>;

/** A user, a project and three uploads: a PNG, a 4 s video with sound, a 20 s WAV. */
async function projectWithMedia(service: RunningService, media: { mp4: Buffer }, name: string) {
  const user = await editorUser(service);
  const editor = editorClient(() => service, user.token);
  const project = await editor.createProject({ name, aspect_ratio: '16:9' });
  const upload = async (data: Buffer, type: string): Promise<Asset> => {
    const answer = await editor.upload(project.id, data, type);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body.asset;
  };
  const image = await upload(makeMedia('png'), 'image/png');
  const video = await upload(media.mp4, 'video/mp4');
  const sound = await upload(makeMedia('wav', { seconds: 20 }), 'audio/wav');
  assert.equal(video.kind, 'video');
  assert.ok(Math.abs((video.metadata.duration_sec as number) - 4) < 0.1, JSON.stringify(video.metadata));
  return { user, editor, project, image, video, sound };
}

async function stateOf(editor: Editor, projectId: string): Promise<ProjectState> {
  const answer = await editor.state(projectId);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

async function added(editor: Editor, projectId: string, body: Record<string, unknown>): Promise<Clip> {
  const answer = await editor.addClip(projectId, body);
  assert.equal(answer.status, 200, `${JSON.stringify(body)} → ${JSON.stringify(answer.body)}`);
  return answer.body.clip;
}

async function patched(
  editor: Editor,
  projectId: string,
  clipId: string,
  body: Record<string, unknown>,
): Promise<Clip> {
  const answer = await editor.patchClip(projectId, clipId, body);
  assert.equal(answer.status, 200, `${JSON.stringify(body)} → ${JSON.stringify(answer.body)}`);
  return answer.body.clip;
}

/** Sends a change that must be refused: 400 with `message`, the revision and the clips as they were. */
async function refused(
  editor: Editor,
  projectId: string,
  send: () => Promise<{ status: number; body: unknown }>,
  message: string,
): Promise<void> {
  const before = await stateOf(editor, projectId);
  const answer = await send();
  assert.equal(answer.status, 400, `${message}: ${JSON.stringify(answer.body)}`);
  assert.equal((answer.body as { error?: string }).error, message);
  const after = await stateOf(editor, projectId);
  assert.equal(after.project.revision, before.project.revision, `${message}: no new revision`);
  assert.deepEqual(after.clips, before.clips, `${message}: the clips as they were`);
}

const NO_TEXT = { text: null, style: null, position: null, color: null, background: null };

describe('editor timeline, second edition (REST)', () => {
  let mongo: TestMongo;
  let service: RunningService;
  const media: { mp4: Buffer } = { mp4: Buffer.alloc(0) };

  before(async () => {
    media.mp4 = makeVideo();
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: DB,
      TIMELINE_MAX_SEC: String(TIMELINE_MAX_SEC),
      RATE_LIMIT_PER_MINUTE: '100000',
    });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('creates each kind of clip with every field and reads them back through the state and the events', async () => {
    const { user, editor, project, image, video, sound } = await projectWithMedia(
      service,
      media,
      'Every field',
    );
    const videoId = (await stateOf(editor, project.id)).videos[0]!.id;
    const socket = await openEventsSocket(service.url, project.id, { token: user.token });
    try {
      const still = await added(editor, project.id, {
        track: 'video',
        asset_id: image.id,
        duration_sec: 4,
        transition_in: { type: 'fadeblack', duration_sec: 0.5 },
        motion: 'zoom_in',
      });
      const moving = await added(editor, project.id, {
        track: 'video',
        asset_id: video.id,
        volume: 0.8,
        transition_in: { type: 'fade', duration_sec: 1 },
        speed: 2,
        fade_in_sec: 0.25,
        fade_out_sec: 0.5,
      });
      const music = await added(editor, project.id, {
        track: 'music',
        asset_id: sound.id,
        start_sec: 0,
        duration_sec: 5,
        volume: 0.5,
        fade_in_sec: 1,
        fade_out_sec: 2,
      });
      const lower = await added(editor, project.id, {
        track: 'text',
        text: 'Ada Lovelace\nMathematician',
        style: 'lower_third',
        position: 'top',
        color: '#FFCC00',
        background: 'none',
        start_sec: 1,
        duration_sec: 2,
        fade_in_sec: 0.2,
        fade_out_sec: 0.4,
      });
      const plain = await added(editor, project.id, { track: 'text', text: 'The end', asset_id: null });

      const base = (clip: Clip) => ({ id: clip.id, video_id: videoId });
      assert.deepEqual(still, {
        ...base(still),
        track: 'video',
        idx: 0,
        asset_id: image.id,
        start_sec: null,
        trim_start_sec: 0,
        duration_sec: 4,
        volume: 1,
        ...NO_TEXT,
        transition_in: { type: 'fadeblack', duration_sec: 0.5 },
        motion: 'zoom_in',
        speed: null,
        fade_in_sec: null,
        fade_out_sec: null,
      });
      assert.deepEqual(moving, {
        ...base(moving),
        track: 'video',
        idx: 1,
        asset_id: video.id,
        start_sec: null,
        trim_start_sec: 0,
        duration_sec: null,
        volume: 0.8,
        ...NO_TEXT,
        transition_in: { type: 'fade', duration_sec: 1 },
        motion: null,
        speed: 2,
        fade_in_sec: 0.25,
        fade_out_sec: 0.5,
      });
      assert.deepEqual(music, {
        ...base(music),
        track: 'music',
        idx: 0,
        asset_id: sound.id,
        start_sec: 0,
        trim_start_sec: 0,
        duration_sec: 5,
        volume: 0.5,
        ...NO_TEXT,
        transition_in: null,
        motion: null,
        speed: null,
        fade_in_sec: 1,
        fade_out_sec: 2,
      });
      assert.deepEqual(lower, {
        ...base(lower),
        track: 'text',
        idx: 0,
        asset_id: null,
        start_sec: 1,
        trim_start_sec: null,
        duration_sec: 2,
        volume: null,
        text: 'Ada Lovelace\nMathematician',
        style: 'lower_third',
        position: 'top',
        color: '#FFCC00',
        background: 'none',
        transition_in: null,
        motion: null,
        speed: null,
        fade_in_sec: 0.2,
        fade_out_sec: 0.4,
      });
      assert.deepEqual(plain, {
        ...base(plain),
        track: 'text',
        idx: 1,
        asset_id: null,
        start_sec: null,
        trim_start_sec: null,
        duration_sec: 3,
        volume: null,
        text: 'The end',
        style: 'title',
        position: 'center',
        color: '#FFFFFF',
        background: 'none',
        transition_in: null,
        motion: null,
        speed: null,
        fade_in_sec: 0.3,
        fade_out_sec: 0.3,
      });

      // The state reads the same clips, ordered by track (video, voice, sfx, music, text) then idx.
      const state = await stateOf(editor, project.id);
      assert.deepEqual(state.clips, [still, moving, music, lower, plain]);
      // And so do the events, with the revision after each.
      await socket.waitFor(
        'five clip.created',
        (events) => events.filter((event) => event.type === 'clip.created').length === 5,
      );
      const created = socket.events.filter((event) => event.type === 'clip.created');
      assert.deepEqual(
        created.map((event) => event.data.clip),
        [still, moving, music, lower, plain],
      );

      // A PATCH changes what it names and nothing else; a text clip's style brings its own look.
      const restyled = await patched(editor, project.id, plain.id, { style: 'caption', duration_sec: 0.5 });
      assert.deepEqual(
        [restyled.position, restyled.background, restyled.fade_in_sec, restyled.fade_out_sec],
        ['bottom', 'box', 0.25, 0.25],
      );
      const positioned = await patched(editor, project.id, lower.id, { position: null, text: 'Ada' });
      assert.deepEqual(
        [positioned.position, positioned.text, positioned.color],
        ['bottom', 'Ada', '#FFCC00'],
      );
      const cut = await patched(editor, project.id, moving.id, { transition_in: null, speed: 0.5 });
      assert.deepEqual([cut.transition_in, cut.speed, cut.volume], [null, 0.5, 0.8]);
      await socket.waitFor('the clip.updated of the cut', (events) =>
        events.some(
          (event) => event.type === 'clip.updated' && (event.data.clip as Clip | undefined)?.id === moving.id,
        ),
      );
      const update = socket.events.filter((event) => event.type === 'clip.updated').at(-1)!;
      assert.deepEqual(update.data.clip, cut);
      assert.equal(update.data.revision, (await stateOf(editor, project.id)).project.revision);
    } finally {
      await socket.close();
    }
  });

  it('answers each validation message once with 400 and changes nothing', async () => {
    const { editor, project, image, video, sound } = await projectWithMedia(service, media, 'Messages');
    const still = await added(editor, project.id, { track: 'video', asset_id: image.id, duration_sec: 2 });
    const moving = await added(editor, project.id, { track: 'video', asset_id: video.id });
    const music = await added(editor, project.id, { track: 'music', asset_id: sound.id });
    const title = await added(editor, project.id, { track: 'text', text: 'Hello' });
    const post = (body: Record<string, unknown>) => () => editor.addClip(project.id, body);
    const patch = (clip: Clip, body: Record<string, unknown>) => () =>
      editor.patchClip(project.id, clip.id, body);
    const text = { track: 'text', text: 'Hi' };
    const cases: [() => Promise<{ status: number; body: unknown }>, string][] = [
      [post({ track: 'subtitles', text: 'x' }), 'track must be one of video, voice, sfx, music, text'],
      [post({ track: 'video' }), 'asset_id is required'],
      [post({ track: 'text' }), 'text must be 1 to 500 characters'],
      [patch(title, { text: 'x'.repeat(501) }), 'text must be 1 to 500 characters'],
      [post({ ...text, style: 'banner' }), 'style must be one of title, lower_third, caption'],
      [patch(title, { position: 'middle' }), 'position must be one of top, center, bottom'],
      [post({ ...text, color: 'white' }), 'color must be a #RRGGBB colour'],
      [patch(title, { background: 'blur' }), 'background must be one of none, box'],
      [post({ ...text, duration_sec: 61 }), 'duration_sec must be at most 60'],
      [patch(title, { duration_sec: 0.25 }), 'duration_sec must be at least 0.5'],
      [
        patch(moving, { transition_in: { type: 'dissolve', duration_sec: 1 } }),
        'transition_in.type must be one of fade, fadeblack, fadewhite, wipeleft, wiperight, slideleft, slideright, circleopen',
      ],
      [
        patch(moving, { transition_in: { type: 'fade', duration_sec: 3 } }),
        'transition_in.duration_sec must be a number from 0.1 to 2',
      ],
      [
        // The 2 s image before it: 1.5 s is more than half of it.
        patch(moving, { transition_in: { type: 'fade', duration_sec: 1.5 } }),
        'transition_in is longer than half of a clip it joins',
      ],
      [
        patch(still, { motion: 'spin' }),
        'motion must be one of none, zoom_in, zoom_out, pan_left, pan_right',
      ],
      [patch(moving, { speed: 8 }), 'speed must be a number from 0.25 to 4'],
      [patch(music, { fade_in_sec: 11 }), 'fade_in_sec must be a number from 0 to 10'],
      [patch(music, { fade_out_sec: -1 }), 'fade_out_sec must be a number from 0 to 10'],
      [patch(moving, { motion: 'zoom_in' }), 'motion does not apply to video clips'],
      [post({ track: 'video', asset_id: image.id, speed: 2 }), 'speed does not apply to image clips'],
      [patch(still, { fade_in_sec: 1 }), 'fade_in_sec does not apply to image clips'],
      [
        patch(music, { transition_in: { type: 'fade', duration_sec: 1 } }),
        'transition_in does not apply to audio clips',
      ],
      [post({ track: 'music', asset_id: sound.id, text: 'la la' }), 'text does not apply to audio clips'],
      [patch(title, { speed: 2 }), 'speed does not apply to text clips'],
      [post({ ...text, asset_id: image.id }), 'asset_id does not apply to text clips'],
      [patch(title, { volume: 0.5 }), 'volume does not apply to text clips'],
      [
        post({ ...text, start_sec: TIMELINE_MAX_SEC - 1, duration_sec: 2 }),
        `timeline would be longer than ${TIMELINE_MAX_SEC} seconds`,
      ],
    ];
    for (const [send, message] of cases) await refused(editor, project.id, send, message);
  });

  it('refuses a delete, trim, move or shortening that would leave a neighbour’s transition too long', async () => {
    const { editor, project, image, video } = await projectWithMedia(service, media, 'Neighbours');
    // a: the 4 s video; b: a 6 s image; c: a 6 s image coming in over b with a 1.5 s fade.
    const a = await added(editor, project.id, { track: 'video', asset_id: video.id });
    const b = await added(editor, project.id, { track: 'video', asset_id: image.id, duration_sec: 6 });
    const c = await added(editor, project.id, {
      track: 'video',
      asset_id: image.id,
      duration_sec: 6,
      transition_in: { type: 'wipeleft', duration_sec: 1.5 },
    });
    const message = 'transition_in is longer than half of a clip it joins';
    // Without b, c joins a (4 s): fine; trimmed to 2.5 s, a is too short for it once b is gone.
    await refused(editor, project.id, () => editor.patchClip(project.id, b.id, { duration_sec: 2 }), message);
    await refused(
      editor,
      project.id,
      () => editor.patchClip(project.id, c.id, { duration_sec: 2.9 }),
      message,
    );
    await patched(editor, project.id, a.id, { trim_start_sec: 1.5 });
    await refused(editor, project.id, () => editor.deleteClip(project.id, b.id), message);
    // Moving a between b and c gives c a 2.5 s neighbour.
    await refused(editor, project.id, () => editor.patchClip(project.id, a.id, { idx: 1 }), message);
    // Speed counts: at 2×, a's 2.5 s of source last 1.25 s.
    await patched(editor, project.id, c.id, { transition_in: { type: 'wipeleft', duration_sec: 1.25 } });
    await refused(
      editor,
      project.id,
      () => editor.patchClip(project.id, a.id, { speed: 2, idx: 1 }),
      message,
    );
    // Each of these is fine once the transition fits.
    await patched(editor, project.id, c.id, { transition_in: { type: 'wipeleft', duration_sec: 0.6 } });
    await patched(editor, project.id, a.id, { speed: 2, idx: 1 });
    const removed = await editor.deleteClip(project.id, b.id);
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    const track = (await stateOf(editor, project.id)).clips.filter((clip) => clip.track === 'video');
    assert.deepEqual(
      track.map((clip) => [clip.id, clip.idx, clip.transition_in?.duration_sec ?? null]),
      [
        [a.id, 0, null],
        [c.id, 1, 0.6],
      ],
    );
  });

  it('bounds the timeline with transitions overlapping and speed stretching clips', async () => {
    const { editor, project, image, video } = await projectWithMedia(service, media, 'Bound');
    const tooLong = `timeline would be longer than ${TIMELINE_MAX_SEC} seconds`;
    for (const duration_sec of [11, 11, 12]) {
      await added(editor, project.id, { track: 'video', asset_id: image.id, duration_sec });
    }
    const addImage = (body: Record<string, unknown>) => () =>
      editor.addClip(project.id, { track: 'video', asset_id: image.id, ...body });
    const patchClip = (clip: Clip, body: Record<string, unknown>) => () =>
      editor.patchClip(project.id, clip.id, body);
    // 34 s so far; an 8 s clip ends at 42, unless its 2 s transition overlaps the one before: 40.
    await refused(editor, project.id, addImage({ duration_sec: 8 }), tooLong);
    const overlapping = await added(editor, project.id, {
      track: 'video',
      asset_id: image.id,
      duration_sec: 8,
      transition_in: { type: 'fade', duration_sec: 2 },
    });
    await refused(editor, project.id, patchClip(overlapping, { transition_in: null }), tooLong);
    const shorter = { transition_in: { type: 'fade', duration_sec: 1 } };
    await refused(editor, project.id, patchClip(overlapping, shorter), tooLong);
    // Speed: the 4 s video at 1× takes 4 s, at 0.5× 8 s (duration_sec is timeline time).
    await patched(editor, project.id, overlapping.id, { duration_sec: 2, ...shorter });
    const moving = await added(editor, project.id, { track: 'video', asset_id: video.id });
    await refused(editor, project.id, patchClip(moving, { speed: 0.5 }), tooLong);
    const slower = await patched(editor, project.id, moving.id, { speed: 0.9 });
    assert.equal(slower.speed, 0.9);
    // Text clips count: one right after the last text clip, past the bound, is refused.
    await added(editor, project.id, { track: 'text', text: 'One', start_sec: 36, duration_sec: 4 });
    await refused(
      editor,
      project.id,
      () => editor.addClip(project.id, { track: 'text', text: 'Two' }),
      tooLong,
    );
  });

  it('keeps If-Match on the new fields: a stale revision is 409, the current one applies', async () => {
    const { editor, project } = await projectWithMedia(service, media, 'If-Match');
    const revision = (await stateOf(editor, project.id)).project.revision;
    const stale = await editor.addClip(
      project.id,
      { track: 'text', text: 'x' },
      { 'if-match': `"${revision - 1}"` },
    );
    assert.equal(stale.status, 409, JSON.stringify(stale.body));
    assert.deepEqual(stale.body, { error: 'The project has changed since that revision', revision });
    const fresh = await editor.addClip(
      project.id,
      { track: 'text', text: 'x' },
      { 'if-match': String(revision) },
    );
    assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
    const patchedStale = await editor.patchClip(
      project.id,
      fresh.body.clip.id,
      { color: '#000000' },
      { 'if-match': String(revision) },
    );
    assert.equal(patchedStale.status, 409);
    const state = await stateOf(editor, project.id);
    assert.equal(state.project.revision, revision + 1);
    assert.equal(state.clips[0]!.color, '#FFFFFF');
  });

  it('reads a clip stored before the second edition with its defaults, and lets it take the new fields', async () => {
    const { editor, project, image, video } = await projectWithMedia(service, media, 'Old clips');
    const videoId = (await stateOf(editor, project.id)).videos[0]!.id;
    // Clips exactly as the first edition stored them, written into the project document.
    const client = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    try {
      const projects = client
        .db(DB)
        .collection<{ _id: string; version: number; clips: Record<string, unknown>[] }>('projects');
      const doc = await projects.findOne({ _id: project.id });
      const old = (id: string, asset_id: string, idx: number, duration_sec: number | null) => ({
        id,
        video_id: videoId,
        track: 'video',
        idx,
        asset_id,
        start_sec: null,
        trim_start_sec: 0,
        duration_sec,
        volume: 1,
        created_at: new Date(),
      });
      const clips = [
        old('vc_oldImage000000001', image.id, 0, 5),
        old('vc_oldVideo000000001', video.id, 1, null),
      ];
      await projects.replaceOne({ _id: project.id }, { ...doc!, clips, version: doc!.version + 1 });
    } finally {
      await client.close();
    }
    const [still, moving] = (await stateOf(editor, project.id)).clips;
    const first = {
      video_id: videoId,
      track: 'video',
      start_sec: null,
      trim_start_sec: 0,
      volume: 1,
      ...NO_TEXT,
      transition_in: null,
    };
    assert.deepEqual(still, {
      id: 'vc_oldImage000000001',
      ...first,
      idx: 0,
      asset_id: image.id,
      duration_sec: 5,
      motion: 'none',
      speed: null,
      fade_in_sec: null,
      fade_out_sec: null,
    });
    assert.deepEqual(moving, {
      id: 'vc_oldVideo000000001',
      ...first,
      idx: 1,
      asset_id: video.id,
      duration_sec: null,
      motion: null,
      speed: 1,
      fade_in_sec: 0,
      fade_out_sec: 0,
    });
    const zooming = await patched(editor, project.id, still!.id, { motion: 'pan_right' });
    assert.equal(zooming.motion, 'pan_right');
    const faded = await patched(editor, project.id, moving!.id, {
      transition_in: { type: 'slideleft', duration_sec: 2 },
      fade_out_sec: 1,
    });
    assert.deepEqual(
      [faded.transition_in, faded.fade_out_sec, faded.fade_in_sec],
      [{ type: 'slideleft', duration_sec: 2 }, 1, 0],
    );
  });
});
