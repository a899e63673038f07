// Both agents and the timeline's second edition (docs/editor.md, The builtin director, The tools): the builtin
// director builds a titled, cross-faded, zooming video from phrases alone and exports it (the mp4 decodes, its
// length shortened by the transitions), understands each new phrase, and says what it cannot do; the LLM agent,
// through the fake Chat Completions server, calls add_text, set_transition, update_clip and export_video and
// reads their results and the routes' refusals. The services as processes, the sandbox provider, a fresh jongodb.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService } from '../helpers/service.ts';
import {
  checkTurnAnswer,
  editorClient,
  editorUser,
  makeMedia,
  videoTrack,
  withServiceLogs,
  type EditorEvent,
  type InstructAnswer,
} from '../helpers/editor.ts';
import { probeMedia } from '../helpers/ffprobe.ts';
import { startFakeLlm, type FakeLlm, type LlmReply } from '../fakes/llm-server.ts';
import { readConversation } from '../fakes/llm-scripts.ts';

const MEDIA_LINK = /(https?:\/\/\S+\/media\/[A-Za-z0-9_.-]+\.mp4)/;
const TOO_LONG = 'transition_in is longer than half of a clip it joins';
const SANDBOX = {
  SANDBOX_VIDEO_MS: '300',
  SANDBOX_IMAGE_MS: '200',
  PROVIDER_POLL_INTERVAL_MS: '200',
  PROVIDER_TIMEOUT_MS: '60000',
  RATE_LIMIT_PER_MINUTE: '100000',
};

type Fields = Record<string, unknown>;

const say = (text: string): LlmReply => ({ kind: 'message', text });
const calls = (...list: [string, unknown][]): LlmReply => ({
  kind: 'message',
  tool_calls: list.map(([name, args]) => ({ name, arguments: JSON.stringify(args) })),
});

describe("the agents and the timeline's second edition", () => {
  let mongo: TestMongo;
  let llm: FakeLlm;
  let builtin: RunningService;
  let agent: RunningService;
  const work = mkdtempSync(join(tmpdir(), 'mf-agents-v2-'));

  before(async () => {
    mongo = await startMongo();
    llm = await startFakeLlm();
    [builtin, agent] = await Promise.all([
      startService({ MONGO_URL: mongo.uri, MONGO_DB: 'agents_v2', ...SANDBOX }),
      startService({
        MONGO_URL: mongo.uri,
        MONGO_DB: 'agents_v2_llm',
        AGENT: 'llm',
        LLM_BASE_URL: llm.url,
        LLM_API_KEY: llm.apiKey,
        LLM_MODEL: 'fake-model',
        LLM_TIMEOUT_MS: '5000',
        AGENT_MAX_STEPS: '4',
        ...SANDBOX,
      }),
    ]);
  });
  after(async () => {
    await Promise.all([builtin?.stop(), agent?.stop()]);
    await llm?.close();
    await mongo?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  async function setUp(service: RunningService) {
    const user = await editorUser(service, { credits: 100_000 });
    const editor = editorClient(() => service, user.token);
    const project = await editor.createProject({ name: 'Lighthouse', aspect_ratio: '16:9' });
    const state = await editor.state(project.id);
    return { editor, project, videoId: state.body.videos[0]!.id };
  }
  type Editor = Awaited<ReturnType<typeof setUp>>['editor'];

  /** One turn that must succeed; its answer. */
  async function instruct(editor: Editor, projectId: string, instruction: string) {
    const answer = await editor.instruct(projectId, { instruction });
    checkTurnAnswer(answer, projectId);
    return answer.body;
  }

  /** Uploads a one-colour PNG; its asset id. */
  async function uploadImage(editor: Editor, projectId: string, colour: string): Promise<string> {
    const upload = await editor.upload(projectId, makeMedia('png', { colour }), 'image/png');
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    return upload.body.asset.id;
  }

  /** Downloads a `/media/` link and decodes it with ffprobe. */
  async function probeLink(url: string) {
    const response = await fetch(url);
    assert.equal(response.status, 200, url);
    const path = join(work, `${Math.random().toString(36).slice(2)}.mp4`);
    writeFileSync(path, Buffer.from(await response.arrayBuffer()));
    return probeMedia(path);
  }

  const ofType = (events: EditorEvent[], type: string) => events.filter((event) => event.type === type);
  const toolCalls = (body: InstructAnswer, name: string) =>
    ofType(body.agent_events, 'tool.started').filter((event) => event.data.name === name);
  const updated = (body: InstructAnswer) =>
    ofType(body.agent_events, 'clip.updated').map((event) => event.data.clip as Fields);
  const near = (actual: number, expected: number, what: string) =>
    assert.ok(Math.abs(actual - expected) < 0.35, `${what}: ${actual}, expected ${expected}`);

  /** A storyboard of `scenes` and one "continue" per scene: `scenes` 5-second video clips. */
  async function scenes(editor: Editor, projectId: string, count: number) {
    await instruct(editor, projectId, `a ${count}-scene video about a lighthouse at dawn`);
    for (let scene = 1; scene <= count; scene += 1) {
      const body = await instruct(editor, projectId, 'continue');
      assert.equal(body.clips_created.length, 1, body.assistant_text);
    }
  }

  it('the builtin director builds a titled, cross-faded, zooming 4-scene video from phrases alone and exports it', () =>
    withServiceLogs(
      () => [builtin],
      async () => {
        const { editor, project, videoId } = await setUp(builtin);
        await scenes(editor, project.id, 3);
        const image = await uploadImage(editor, project.id, 'blue');
        const added = await instruct(editor, project.id, 'add the image as scene 2');
        assert.equal(added.clips_created[0]?.asset_id, image, added.assistant_text);

        const titled = await instruct(editor, project.id, 'add a title Lighthouse at dawn');
        assert.equal(titled.clips_created.length, 1, titled.assistant_text);
        const title = titled.clips_created[0] as unknown as Fields;
        assert.deepEqual(
          [title.track, title.asset_id, title.text, title.style, title.start_sec, title.duration_sec],
          ['text', null, 'Lighthouse at dawn', 'title', 0, 3],
        );
        assert.equal(
          titled.assistant_text,
          'Added the title "Lighthouse at dawn" at 0 s, for 3 s. What would you like to change next?',
        );

        const faded = await instruct(editor, project.id, 'crossfade between the scenes');
        assert.deepEqual(toolCalls(faded, 'set_transition')[0]?.data.arguments, {
          clip_id: 'all',
          type: 'fade',
          duration_sec: 1,
        });
        assert.deepEqual(
          updated(faded).map((clip) => [clip.idx, clip.transition_in]),
          [1, 2, 3].map((idx) => [idx, { type: 'fade', duration_sec: 1 }]),
        );
        assert.match(faded.assistant_text, /^Added a 1 s crossfade on every cut \(3\);.* 3 s shorter\./);

        const zoomed = await instruct(editor, project.id, 'slow zoom on the images');
        assert.deepEqual(
          updated(zoomed).map((clip) => [clip.asset_id, clip.motion]),
          [[image, 'zoom_in']],
        );
        assert.match(zoomed.assistant_text, /^Added a slow zoom in to the image \(clip 2\)\./);

        const state = await editor.state(project.id, videoId);
        const track = videoTrack(state.body).map((clip) => clip as unknown as Fields);
        assert.deepEqual(
          track.map((clip) => [clip.motion, (clip.transition_in as Fields | null)?.type ?? null]),
          [
            [null, null],
            ['zoom_in', 'fade'],
            [null, 'fade'],
            [null, 'fade'],
          ],
        );

        // 3 videos of 5 s and a 5 s image, 3 crossfades of 1 s: 17 s.
        const exported = await instruct(editor, project.id, 'export it');
        const link = MEDIA_LINK.exec(exported.assistant_text)?.[1];
        assert.ok(link, exported.assistant_text);
        assert.match(exported.assistant_text, /^Here is your video \(17 s, 4 clips\): /);
        const media = await probeLink(link);
        near(media.durationSeconds, 17, 'the exported duration');
        assert.ok(
          media.streams.some((stream) => stream.codecType === 'video' && stream.codecName === 'h264'),
        );
      },
    ));

  it('the builtin director: a caption at a time, fade to black, half speed, a music fade-out, a preview', () =>
    withServiceLogs(
      () => [builtin],
      async () => {
        const { editor, project } = await setUp(builtin);
        await scenes(editor, project.id, 2);

        const captioned = await instruct(editor, project.id, 'add a caption "Low tide" at 5 seconds');
        const caption = captioned.clips_created[0] as unknown as Fields;
        assert.deepEqual(
          [caption.track, caption.text, caption.style, caption.start_sec],
          ['text', 'Low tide', 'caption', 5],
        );

        const black = await instruct(editor, project.id, 'fade to black between scenes');
        assert.deepEqual(
          updated(black).map((clip) => [clip.idx, clip.transition_in]),
          [[1, { type: 'fadeblack', duration_sec: 1 }]],
        );

        const slow = await instruct(editor, project.id, 'play clip 1 at half speed');
        assert.deepEqual(
          updated(slow).map((clip) => [clip.idx, clip.speed]),
          [[0, 0.5]],
        );
        assert.equal(
          slow.assistant_text,
          'Clip 1 now plays at half speed, so it now lasts 10 s. What would you like to change next?',
        );

        const song = await editor.upload(project.id, makeMedia('wav', { seconds: 6 }), 'audio/wav');
        assert.equal(song.status, 200, JSON.stringify(song.body));
        await instruct(editor, project.id, `use ${song.body.asset.id} as music`);
        const faded = await instruct(editor, project.id, 'fade out the music at the end');
        assert.deepEqual(
          updated(faded).map((clip) => [clip.track, clip.fade_out_sec]),
          [['music', 2]],
        );

        // Clip 1 at half speed lasts 10 s, clip 2 5 s, joined by 1 s through black: 14 s.
        const preview = await instruct(editor, project.id, 'export a preview');
        assert.deepEqual(toolCalls(preview, 'export_video')[0]?.data.arguments, { quality: 'preview' });
        const link = MEDIA_LINK.exec(preview.assistant_text)?.[1];
        assert.ok(link, preview.assistant_text);
        assert.match(preview.assistant_text, /^Here is a preview of your video \(360p\) \(14 s, 2 clips\): /);
        const media = await probeLink(link);
        near(media.durationSeconds, 14, 'the preview duration');
        const picture = media.streams.find((stream) => stream.codecType === 'video')!;
        assert.equal(Math.min(picture.width!, picture.height!), 360, JSON.stringify(picture));
      },
    ));

  it('the builtin director says what it cannot do and lists what it can', () =>
    withServiceLogs(
      () => [builtin],
      async () => {
        const { editor, project } = await setUp(builtin);
        for (const instruction of ['make the colours warmer', 'play it at half speed']) {
          const answer = await instruct(editor, project.id, instruction);
          assert.match(answer.assistant_text, /^I can't do that myself \(or I didn't understand it\)\./);
          for (const phrase of [
            'add a title Lighthouse at dawn',
            'crossfade between the scenes',
            'slow zoom on the images',
            'play clip 2 at half speed',
            'fade out the music at the end',
            'export it',
          ])
            assert.ok(answer.assistant_text.includes(`"${phrase}"`), `${instruction}: ${phrase}`);
          assert.deepEqual(ofType(answer.agent_events, 'tool.started'), []);
        }
        // A phrase it knows, on a timeline that cannot take it: said, nothing changed.
        const noCut = await instruct(editor, project.id, 'crossfade between the scenes');
        assert.match(noCut.assistant_text, /^There is no cut yet: the video track has 0 clips\./);
        assert.deepEqual(toolCalls(noCut, 'set_transition'), []);
      },
    ));

  it('the LLM agent: add_text, set_transition, update_clip and export_video, with the routes’ refusals as tool errors', () =>
    withServiceLogs(
      () => [agent],
      async () => {
        const { editor, project } = await setUp(agent);
        // Two 2-second pictures on the video track: a transition may last at most 1 s there.
        const clips: string[] = [];
        for (const colour of ['red', 'blue']) {
          const asset = await uploadImage(editor, project.id, colour);
          const added = await editor.addClip(project.id, {
            track: 'video',
            asset_id: asset,
            duration_sec: 2,
          });
          assert.equal(added.status, 200, JSON.stringify(added.body));
          clips.push(added.body.clip.id);
        }
        const seen = llm.requests.length;
        llm.script((request) => {
          const { steps } = readConversation(request);
          if (steps.length > 0) return say('Done: a title, a crossfade and the export. Anything else?');
          return calls(
            ['add_text', { text: 'Red, then blue', style: 'lower_third', start_sec: 0.5, duration_sec: 2 }],
            ['set_transition', { clip_id: 'all', type: 'fade', duration_sec: 1.5 }],
            ['update_clip', { clip_id: clips[1], transition_in: { type: 'fade', duration_sec: 1.5 } }],
            ['set_transition', { clip_id: 'all', type: 'dissolve' }],
            ['add_text', { text: 'x', duration_sec: 61 }],
            ['update_clip', { clip_id: clips[0], speed: 2 }],
            ['set_transition', { clip_id: 'all', type: 'fade', duration_sec: 0.5 }],
            ['export_video', { quality: 'final' }],
          );
        });
        const answer = await editor.instruct(project.id, { instruction: 'title it, crossfade and export' });
        const { creditsCharged } = checkTurnAnswer(answer, project.id);
        assert.equal(creditsCharged, 5, 'editing and exporting cost nothing beyond the turn');
        const body = answer.body;

        const finished = ofType(body.agent_events, 'tool.finished').map((event) => [
          event.data.name,
          event.data.ok,
          event.data.ok ? null : event.data.summary,
        ]);
        assert.deepEqual(finished, [
          ['add_text', true, null],
          ['set_transition', false, `${TOO_LONG} (clip 2, ${clips[1]})`],
          ['update_clip', false, TOO_LONG],
          [
            'set_transition',
            false,
            'invalid arguments: transition_in.type must be one of fade, fadeblack, fadewhite, wipeleft, wiperight, slideleft, slideright, circleopen, or none',
          ],
          ['add_text', false, 'duration_sec must be at most 60'],
          ['update_clip', false, 'speed does not apply to image clips'],
          ['set_transition', true, null],
          ['export_video', true, null],
        ]);

        // The model read every result: the tool messages of its second request, in order.
        const second = llm.requests[seen + 1]!.body;
        const results = second.messages
          .filter((message) => message.role === 'tool')
          .map(
            (message) =>
              JSON.parse(String(message.content)) as { ok: boolean; result?: Fields; error?: string },
          );
        assert.equal(results.length, 8);
        const text = results[0]!.result!.clip as Fields;
        assert.deepEqual(
          [text.track, text.asset_id, text.text, text.style, text.start_sec, text.duration_sec],
          ['text', null, 'Red, then blue', 'lower_third', 0.5, 2],
        );
        assert.equal(results[2]!.error, TOO_LONG);
        const transitions = (results[6]!.result!.clips as Fields[]).map((clip) => [
          clip.id,
          clip.transition_in,
        ]);
        assert.deepEqual(transitions, [[clips[1], { type: 'fade', duration_sec: 0.5 }]]);
        const exported = results[7]!.result as { video_url: string; duration_sec: number };
        near(exported.duration_sec, 3.5, 'the export answer');

        // The tools offered: the new ones, as plain JSON Schema.
        const offered = llm.requests[seen]!.body.tools ?? [];
        for (const name of ['add_text', 'set_transition', 'export_video'])
          assert.ok(
            offered.some((tool) => tool.function.name === name),
            name,
          );
        assert.doesNotMatch(JSON.stringify(offered), /errorMessage/);

        // One clip changed once; the refused calls changed nothing.
        assert.deepEqual(
          updated(body).map((clip) => [clip.id, clip.transition_in]),
          [[clips[1], { type: 'fade', duration_sec: 0.5 }]],
        );
        const media = await probeLink(exported.video_url);
        near(media.durationSeconds, 3.5, 'the exported duration');

        // The next turn's prompt lists the text clip by its words, never as an asset.
        llm.script(() => say('Noted. Anything else?'));
        const next = llm.requests.length;
        checkTurnAnswer(await editor.instruct(project.id, { instruction: 'thanks' }), project.id);
        const system = String(llm.requests[next]!.body.messages[0]!.content);
        assert.match(system, /five tracks/);
        assert.match(
          system,
          new RegExp(`- text #0: vc_[A-Za-z0-9_-]+ "Red, then blue" \\(at 0\\.5s, 2s, lower_third`),
        );
        assert.doesNotMatch(system, /← null/);
        assert.match(
          system,
          new RegExp(`- video #1: ${clips[1]} ← va_\\S+ \\(2s, transition_in fade 0\\.5s\\)`),
        );
      },
    ));
});
