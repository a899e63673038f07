// The bounds on a clip's numbers and on a video's timeline (docs/editor.md#bounds) end to end: the service runs
// as a process; every number goes over real HTTP as the JSON text a client sends (1e400 included, which a JSON
// parser reads as Infinity); the agent path is the builtin director placing a generated scene.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService } from '../helpers/service.ts';
import {
  checkTurnAnswer,
  editorClient,
  editorUser,
  makeMedia,
  type Asset,
  type Clip,
  type ProjectState,
} from '../helpers/editor.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';
import { startFakeLlm, type FakeLlm } from '../fakes/llm-server.ts';

const SERVICE_ENV = {
  SANDBOX_VIDEO_MS: '300',
  SANDBOX_IMAGE_MS: '200',
  PROVIDER_POLL_INTERVAL_MS: '200',
  PROVIDER_TIMEOUT_MS: '60000',
  RATE_LIMIT_PER_MINUTE: '100000',
};

type Editor = ReturnType<typeof editorClient>;

/** A body sent as written: `1e400` must reach the service as that text, which `JSON.stringify` cannot write. */
const raw = (fields: Record<string, string | number>) =>
  `{${Object.entries(fields)
    .map(([key, value]) => `"${key}":${value}`)
    .join(',')}}`;

const postRaw = (editor: Editor, projectId: string, body: string) =>
  editor.send<{ clip: Clip; error?: string }>('POST', `/${projectId}/clips`, {
    rawBody: body,
    headers: { 'content-type': 'application/json' },
  });

const patchRaw = (editor: Editor, projectId: string, clipId: string, body: string) =>
  editor.send<{ clip: Clip; error?: string }>('PATCH', `/${projectId}/clips/${clipId}`, {
    rawBody: body,
    headers: { 'content-type': 'application/json' },
  });

async function stateOf(editor: Editor, projectId: string): Promise<ProjectState> {
  const answer = await editor.state(projectId);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

/** A user, a project and two uploaded assets: a PNG and a 2-second WAV. */
async function projectWithMedia(service: RunningService, name: string) {
  const user = await editorUser(service);
  const editor = editorClient(() => service, user.token);
  const project = await editor.createProject({ name });
  const upload = async (data: Buffer, type: string): Promise<Asset> => {
    const answer = await editor.upload(project.id, data, type);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body.asset;
  };
  const image = await upload(makeMedia('png'), 'image/png');
  const sound = await upload(makeMedia('wav', { seconds: 2 }), 'audio/wav');
  assert.ok(Math.abs((sound.metadata.duration_sec as number) - 2) < 0.05, JSON.stringify(sound.metadata));
  return { user, editor, project, image, sound };
}

async function added(editor: Editor, projectId: string, body: Record<string, unknown>): Promise<Clip> {
  const answer = await editor.addClip(projectId, body);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.clip;
}

describe('editor bounds: clip numbers', () => {
  let mongo: TestMongo;
  let service: RunningService;

  before(async () => {
    mongo = await startMongo();
    service = await startService({ MONGO_URL: mongo.uri, MONGO_DB: 'editor_bounds_numbers', ...SERVICE_ENV });
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('refuses a POST whose duration_sec, start_sec or trim_start_sec is above its bound (1e30 and 1e400 too), changing nothing', async () => {
    const { editor, project, image, sound } = await projectWithMedia(service, 'Numbers');
    const before = await stateOf(editor, project.id);
    const cases: [string, Record<string, string | number>, string][] = [];
    for (const literal of ['600.001', '1e30', '1e400']) {
      cases.push([
        `video duration ${literal}`,
        { track: '"video"', asset_id: `"${image.id}"`, duration_sec: literal },
        'duration_sec must be at most 600',
      ]);
    }
    for (const track of ['voice', 'sfx', 'music']) {
      for (const literal of ['3600.5', '1e30', '1e400']) {
        cases.push([
          `${track} duration ${literal}`,
          { track: `"${track}"`, asset_id: `"${sound.id}"`, duration_sec: literal },
          'duration_sec must be at most 3600',
        ]);
      }
    }
    for (const field of ['start_sec', 'trim_start_sec']) {
      for (const literal of ['86400.01', '1e30', '1e400']) {
        cases.push([
          `${field} ${literal}`,
          { track: '"music"', asset_id: `"${sound.id}"`, [field]: literal },
          `${field} must be at most 86400`,
        ]);
      }
    }
    cases.push(
      [
        '3600 on the video track answers its own bound',
        { track: '"video"', asset_id: `"${image.id}"`, duration_sec: '3600' },
        'duration_sec must be at most 600',
      ],
      [
        '-1e400 keeps the lower-bound message',
        { track: '"video"', asset_id: `"${image.id}"`, duration_sec: '-1e400' },
        'duration_sec must be a number > 0',
      ],
      [
        'an earlier field answers first',
        { track: '"music"', asset_id: `"${sound.id}"`, start_sec: '1e400', duration_sec: '1e400' },
        'start_sec must be at most 86400',
      ],
    );
    for (const [what, fields, message] of cases) {
      const answer = await postRaw(editor, project.id, raw(fields));
      assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`);
      assert.deepEqual(answer.body, { error: message }, what);
    }
    assert.deepEqual(await stateOf(editor, project.id), before, 'nothing changed, no revision bump');
  });

  it('accepts each bound itself, and refuses the same numbers by PATCH by the track of the clip', async () => {
    const { editor, project, image, sound } = await projectWithMedia(service, 'Numbers by PATCH');
    const picture = await added(editor, project.id, {
      track: 'video',
      asset_id: image.id,
      duration_sec: 600,
    });
    assert.equal(picture.duration_sec, 600);
    const music = await added(editor, project.id, {
      track: 'music',
      asset_id: sound.id,
      duration_sec: 3600,
      trim_start_sec: 86_400,
    });
    assert.deepEqual([music.duration_sec, music.trim_start_sec], [3600, 86_400]);
    const before = await stateOf(editor, project.id);

    const cases: [string, Clip, Record<string, string>, string][] = [];
    for (const literal of ['600.5', '1e30', '1e400']) {
      cases.push([
        `video ${literal}`,
        picture,
        { duration_sec: literal },
        'duration_sec must be at most 600',
      ]);
    }
    for (const literal of ['3601', '1e30', '1e400']) {
      cases.push([`music ${literal}`, music, { duration_sec: literal }, 'duration_sec must be at most 3600']);
    }
    for (const field of ['start_sec', 'trim_start_sec']) {
      for (const literal of ['86401', '1e30', '1e400']) {
        for (const clip of [picture, music]) {
          cases.push([
            `${clip.track} ${field} ${literal}`,
            clip,
            { [field]: literal },
            `${field} must be at most 86400`,
          ]);
        }
      }
    }
    for (const [what, clip, fields, message] of cases) {
      const answer = await patchRaw(editor, project.id, clip.id, raw(fields));
      assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`);
      assert.deepEqual(answer.body, { error: message }, what);
    }
    assert.deepEqual(await stateOf(editor, project.id), before, 'nothing changed, no revision bump');

    // A sound clip may be 3600 s long where a picture may not: the bound follows the clip's own track.
    const longer = await editor.patchClip(project.id, music.id, { duration_sec: 601, trim_start_sec: 0 });
    assert.equal(longer.status, 200, JSON.stringify(longer.body));
    assert.equal(longer.body.clip.duration_sec, 601);
  });

  it('answers start_sec at its bound with the timeline bound (TIMELINE_MAX_SEC 1800 by default)', async () => {
    const { editor, project, sound } = await projectWithMedia(service, 'Far start');
    const answer = await postRaw(
      editor,
      project.id,
      raw({ track: '"voice"', asset_id: `"${sound.id}"`, start_sec: 86_400 }),
    );
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.deepEqual(answer.body, { error: 'timeline would be longer than 1800 seconds' });
    await added(editor, project.id, { track: 'voice', asset_id: sound.id, start_sec: 1797 });
  });
});

describe('editor bounds: TIMELINE_MAX_SEC', () => {
  let mongo: TestMongo;
  let service: RunningService;
  const db = 'editor_bounds_timeline';
  /** A project made under the default bound whose timeline (100 s) is past the one the service runs with now. */
  let old: Awaited<ReturnType<typeof projectWithMedia>> & { clips: Clip[] };

  before(async () => {
    mongo = await startMongo();
    const roomy = await startService({ MONGO_URL: mongo.uri, MONGO_DB: db, ...SERVICE_ENV });
    try {
      const made = await projectWithMedia(roomy, 'Made under 1800');
      const clips = [];
      for (let i = 0; i < 2; i++) {
        clips.push(
          await added(made.editor, made.project.id, {
            track: 'video',
            asset_id: made.image.id,
            duration_sec: 50,
          }),
        );
      }
      old = { ...made, clips };
    } finally {
      await roomy.stop();
    }
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: db,
      TIMELINE_MAX_SEC: '60',
      ...SERVICE_ENV,
    });
    old.editor = editorClient(() => service, old.user.token);
  });
  after(async () => {
    await service?.stop();
    await mongo?.stop();
  });

  it('refuses a change that would pass the bound with its message: state, revision and events unchanged', async () => {
    const { user, editor, project, image, sound } = await projectWithMedia(service, 'Bounded');
    const first = await added(editor, project.id, { track: 'video', asset_id: image.id, duration_sec: 30 });
    const second = await added(editor, project.id, { track: 'video', asset_id: image.id, duration_sec: 30 });
    const before = await stateOf(editor, project.id);
    const socket = await openEventsSocket(service.url, project.id, { token: user.token, since: 0 });
    try {
      const seen = await socket.waitFor('the history', (events) =>
        events.some((event) => event.data.clip && (event.data.clip as Clip).id === second.id),
      );
      const lastSeq = seen.at(-1)!.seq;

      const refusals: [string, () => ReturnType<Editor['addClip']>][] = [
        [
          'an image clip of the default 5 s',
          () => editor.addClip(project.id, { track: 'video', asset_id: image.id }),
        ],
        ['a picture made longer', () => editor.patchClip(project.id, first.id, { duration_sec: 30.5 })],
        [
          'a sound ending at 61 s',
          () => editor.addClip(project.id, { track: 'music', asset_id: sound.id, start_sec: 59 }),
        ],
      ];
      for (const [what, refused] of refusals) {
        const answer = await refused();
        assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer.body)}`);
        assert.deepEqual(answer.body, { error: 'timeline would be longer than 60 seconds' }, what);
      }
      assert.deepEqual(await stateOf(editor, project.id), before, 'nothing changed, no revision bump');

      // The next change that passes is the next event: nothing was announced for the refused ones.
      const ending = await added(editor, project.id, { track: 'music', asset_id: sound.id, start_sec: 58 });
      const seenAfter = await socket.waitForSeq(lastSeq + 1);
      assert.deepEqual(
        seenAfter
          .filter((event) => event.seq > lastSeq)
          .map((event) => [event.seq, event.type, (event.data.clip as Clip).id]),
        [[lastSeq + 1, 'clip.created', ending.id]],
      );
      assert.equal(seenAfter.at(-1)!.data.revision, before.project.revision + 1);
    } finally {
      await socket.close();
    }
  });

  it('keeps an older project past the bound readable, shortenable and its clips removable, never longer', async () => {
    const { editor, project, image, clips } = old;
    const state = await stateOf(editor, project.id);
    assert.deepEqual(
      state.clips.map((clip) => [clip.id, clip.duration_sec]),
      clips.map((clip) => [clip.id, 50]),
      'a 100-second timeline reads back as it was stored',
    );
    const grow = await editor.addClip(project.id, { track: 'video', asset_id: image.id, duration_sec: 1 });
    assert.deepEqual([grow.status, grow.body], [400, { error: 'timeline would be longer than 60 seconds' }]);

    const shorter = await editor.patchClip(project.id, clips[1]!.id, { duration_sec: 40 });
    assert.equal(shorter.status, 200, `90 s is past 60 but shorter: ${JSON.stringify(shorter.body)}`);
    const same = await editor.patchClip(project.id, clips[1]!.id, { volume: 0.5, idx: 0 });
    assert.equal(same.status, 200, `as long as before: ${JSON.stringify(same.body)}`);
    const longer = await editor.patchClip(project.id, clips[1]!.id, { duration_sec: 45 });
    assert.deepEqual(
      [longer.status, longer.body],
      [400, { error: 'timeline would be longer than 60 seconds' }],
    );

    const removed = await editor.deleteClip(project.id, clips[0]!.id);
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    const atBound = await editor.patchClip(project.id, clips[1]!.id, { duration_sec: 60 });
    assert.equal(atBound.status, 200, JSON.stringify(atBound.body));
    const past = await editor.patchClip(project.id, clips[1]!.id, { duration_sec: 60.5 });
    assert.deepEqual([past.status, past.body], [400, { error: 'timeline would be longer than 60 seconds' }]);
    assert.equal(state.project.revision + 4, (await stateOf(editor, project.id)).project.revision);
  });

  it('refuses the builtin director placing a generated scene past the bound: a tool error with the message, no clip', async () => {
    const { editor, project, image } = await projectWithMedia(service, 'Scenes');
    await added(editor, project.id, { track: 'video', asset_id: image.id, duration_sec: 58 });
    checkTurnAnswer(
      await editor.instruct(project.id, { instruction: 'a 2-scene video about a lighthouse at dawn' }),
      project.id,
    );
    const before = await stateOf(editor, project.id);

    const turn = await editor.instruct(project.id, { instruction: 'continue' });
    checkTurnAnswer(turn, project.id);
    assert.equal(turn.body.media_gen_done, true, turn.body.assistant_text);
    assert.deepEqual(turn.body.clips_created, []);
    const scene = turn.body.assets_created[0]!;
    assert.equal(scene.kind, 'video');
    assert.ok(
      turn.body.assistant_text.includes(
        `couldn't add it to the video track: timeline would be longer than 60 seconds`,
      ),
      turn.body.assistant_text,
    );
    const placing = turn.body.agent_events.find(
      (event) => event.type === 'tool.finished' && event.data.name === 'add_clip',
    );
    assert.deepEqual(
      [placing?.data.ok, placing?.data.summary],
      [false, 'timeline would be longer than 60 seconds'],
      JSON.stringify(turn.body.agent_events),
    );
    const placed = await stateOf(editor, project.id);
    assert.deepEqual(placed.clips, before.clips, 'the scene is in the library, not on the timeline');
    assert.ok(placed.assets.some((asset) => asset.id === scene.id));

    // The director's plain edit of the same asset is refused the same way.
    const again = await editor.instruct(project.id, { instruction: `add ${scene.id} to the end` });
    checkTurnAnswer(again, project.id);
    assert.ok(
      again.body.assistant_text.includes('timeline would be longer than 60 seconds'),
      again.body.assistant_text,
    );
    assert.deepEqual((await stateOf(editor, project.id)).clips, before.clips);
  });
});

describe('editor bounds: the LLM agent’s tools', () => {
  let mongo: TestMongo;
  let llm: FakeLlm;
  let service: RunningService;

  before(async () => {
    mongo = await startMongo();
    llm = await startFakeLlm();
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'editor_bounds_llm',
      AGENT: 'llm',
      LLM_BASE_URL: llm.url,
      LLM_API_KEY: llm.apiKey,
      TIMELINE_MAX_SEC: '60',
      ...SERVICE_ENV,
    });
  });
  after(async () => {
    await service?.stop();
    await llm?.close();
    await mongo?.stop();
  });

  it('answers out-of-bounds update_clip and add_clip calls with tool errors carrying the messages, changing nothing', async () => {
    const { editor, project, image } = await projectWithMedia(service, 'LLM');
    const picture = await added(editor, project.id, { track: 'video', asset_id: image.id, duration_sec: 30 });
    const before = await stateOf(editor, project.id);
    // Arguments as a model writes them: JSON text, 1e400 included (the service parses it as Infinity).
    const calls = [
      ['update_clip', `{"clip_id":"${picture.id}","duration_sec":1e400}`],
      ['update_clip', `{"clip_id":"${picture.id}","start_sec":1e30}`],
      ['add_clip', `{"track":"video","asset_id":"${image.id}","duration_sec":1e30}`],
      ['add_clip', `{"track":"video","asset_id":"${image.id}","duration_sec":31}`],
    ];
    let step = 0;
    llm.script(() =>
      step++ === 0
        ? { kind: 'message', tool_calls: calls.map(([name, args]) => ({ name: name!, arguments: args! })) }
        : { kind: 'message', text: 'None of that fit. What would you like to do?' },
    );
    const turn = await editor.instruct(project.id, { instruction: 'make it much longer' });
    checkTurnAnswer(turn, project.id);
    assert.deepEqual(
      turn.body.agent_events
        .filter((event) => event.type === 'tool.finished')
        .map((event) => [event.data.name, event.data.ok, event.data.summary]),
      [
        ['update_clip', false, 'invalid arguments: duration_sec must be at most 600'],
        ['update_clip', false, 'invalid arguments: start_sec must be at most 86400'],
        ['add_clip', false, 'invalid arguments: duration_sec must be at most 600'],
        ['add_clip', false, 'timeline would be longer than 60 seconds'],
      ],
    );
    assert.deepEqual(turn.body.clips_created, []);
    const afterTurn = await stateOf(editor, project.id);
    assert.deepEqual(afterTurn.clips, before.clips);
    assert.equal(afterTurn.project.revision, before.project.revision, 'a refused tool call bumps nothing');
  });
});
