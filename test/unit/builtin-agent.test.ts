import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Compile } from 'typebox/compile';
import { AGENT_TOOLS, MEDIA_TOOLS, type AgentToolName } from '../../schemas/agent-tools.ts';
import type { AgentAsset, AgentTools, ToolOutcome } from '../../src/editor/agents/agent-model.ts';
import { createBuiltinAgent } from '../../src/editor/agents/builtin.ts';
import { parseDirectorIntent } from '../../src/editor/agents/director-intents.ts';
import { parseLastStoryboard, storyboardScenePrompts } from '../../src/editor/agents/storyboard.ts';
import {
  readGeneratedAssetId,
  readLibraryResult,
  readVideoTrackResult,
} from '../../src/editor/agents/tool-results.ts';

interface FakeClip {
  id: string;
  video_id: string;
  track: string;
  idx: number;
  asset_id: string | null;
  /** What add_clip, add_text and update_clip set beyond the place (duration_sec, motion, text, ...). */
  [field: string]: unknown;
}

interface Call {
  name: string;
  args: Record<string, unknown>;
}

const VIDEO_ID = 'vv_main';

/** A little editor behind the agent tools: a library, one video's five tracks and the project context. */
class FakeEditor implements AgentTools {
  assets: AgentAsset[] = [];
  clips: FakeClip[] = [];
  context = '';
  aspectRatio = '9:16';
  /** Every call of the current turn. */
  calls: Call[] = [];
  /** The error the next generation answers with (once). */
  failNextGeneration: string | null = null;
  /** The error the next add_clip answers with (once). */
  failNextAddClip: string | null = null;
  /** How get_timeline answers: `{ tracks: { video: [...] } }` or `{ clips: [...] }`. */
  timelineShape: 'tracks' | 'clips' = 'tracks';
  private generations = 0;
  private counter = 0;

  startTurn(): void {
    this.calls = [];
    this.generations = 0;
  }

  addAsset(kind: AgentAsset['kind'], source = 'upload', prompt?: string): AgentAsset {
    const id = `va_${++this.counter}`;
    const metadata: Record<string, unknown> = prompt ? { prompt } : {};
    if (kind !== 'image') metadata.duration_sec = 5;
    const asset = { id, kind, source, url: `https://x.test/media/${id}`, metadata };
    this.assets.push(asset);
    return asset;
  }

  track(track: string): FakeClip[] {
    return this.clips.filter((c) => c.track === track).sort((a, b) => a.idx - b.idx);
  }

  kindOf(clip: FakeClip): string | undefined {
    return this.assets.find((a) => a.id === clip.asset_id)?.kind;
  }

  /** The video track as scene prompts (or asset ids for ungenerated pictures), in order. */
  videoTrack(): string[] {
    return this.track('video').map((clip) => {
      const asset = this.assets.find((a) => a.id === clip.asset_id)!;
      return typeof asset.metadata.prompt === 'string' ? asset.metadata.prompt : asset.id;
    });
  }

  callsOf(name: string): Record<string, unknown>[] {
    return this.calls.filter((c) => c.name === name).map((c) => c.args);
  }

  /** A new clip at `idx` (the end when absent) of `track`. */
  private place(
    track: string,
    assetId: string | null,
    idx: unknown,
    fields: Record<string, unknown>,
  ): FakeClip {
    const existing = this.track(track);
    const at = typeof idx === 'number' ? Math.min(idx, existing.length) : existing.length;
    for (const clip of existing) if (clip.idx >= at) clip.idx++;
    const clip: FakeClip = {
      id: `vc_${++this.counter}`,
      video_id: VIDEO_ID,
      track,
      idx: at,
      asset_id: assetId,
      ...fields,
    };
    this.clips.push(clip);
    return clip;
  }

  private renumber(track: string): void {
    this.track(track).forEach((clip, idx) => (clip.idx = idx));
  }

  refuse(name: string, error: string): Promise<ToolOutcome> {
    this.calls.push({ name, args: {} });
    return Promise.resolve({ ok: false, error });
  }

  async call(name: string, raw: unknown): Promise<ToolOutcome> {
    const args = raw as Record<string, unknown>;
    this.calls.push({ name, args });
    const schema = AGENT_TOOLS[name as AgentToolName];
    if (!schema) return { ok: false, error: `unknown tool ${name}` };
    if (!Compile(schema).Check(raw)) return { ok: false, error: `bad arguments for ${name}` };
    if (MEDIA_TOOLS.includes(name as AgentToolName) && ++this.generations > 1) {
      return { ok: false, error: 'only one media generation per turn' };
    }
    const ok = (result: unknown): ToolOutcome => ({ ok: true, result, summary: name });
    switch (name) {
      case 'list_assets':
        return ok({
          assets: this.assets.map((a) => ({
            id: a.id,
            kind: a.kind,
            source: a.source,
            prompt: a.metadata.prompt,
            duration_sec: a.metadata.duration_sec ?? null,
          })),
        });
      case 'get_timeline': {
        assert.equal(args.video_id, VIDEO_ID, 'get_timeline asks for the turn video');
        const clips = this.clips.filter((c) => c.video_id === VIDEO_ID);
        if (this.timelineShape === 'clips') return ok({ clips });
        const names = ['video', 'voice', 'sfx', 'music', 'text'];
        const tracks = Object.fromEntries(names.map((t) => [t, this.track(t)]));
        return ok({ video_id: VIDEO_ID, tracks });
      }
      case 'generate_video':
      case 'generate_image': {
        if (this.failNextGeneration) {
          const error = this.failNextGeneration;
          this.failNextGeneration = null;
          return { ok: false, error };
        }
        const kind = name === 'generate_video' ? 'video' : 'image';
        const asset = this.addAsset(kind, 'agent_generate', String(args.prompt));
        return ok({ asset, job_id: `job_${this.counter}`, credits: 505 });
      }
      case 'add_clip': {
        if (this.failNextAddClip) {
          const error = this.failNextAddClip;
          this.failNextAddClip = null;
          return { ok: false, error };
        }
        const asset = this.assets.find((a) => a.id === args.asset_id);
        if (!asset) return { ok: false, error: 'asset not found' };
        const { track: _track, asset_id: _asset, idx: _idx, ...fields } = args;
        const duration = asset.kind === 'image' ? { duration_sec: 5 } : {};
        return ok({
          clip: this.place(String(args.track), String(args.asset_id), args.idx, { ...duration, ...fields }),
        });
      }
      case 'add_text': {
        const start = args.start_sec ?? null;
        return ok({
          clip: this.place('text', null, undefined, { duration_sec: 3, ...args, start_sec: start }),
        });
      }
      case 'update_clip': {
        const clip = this.clips.find((c) => c.id === args.clip_id);
        if (!clip) return { ok: false, error: 'clip not found' };
        const { clip_id: _id, idx, ...fields } = args;
        const kind = this.kindOf(clip);
        if (fields.motion !== undefined && kind !== 'image')
          return { ok: false, error: `motion does not apply to ${kind} clips` };
        if (fields.speed !== undefined && kind !== 'video')
          return { ok: false, error: `speed does not apply to ${kind} clips` };
        Object.assign(clip, fields);
        if (typeof idx === 'number') {
          const others = this.track(clip.track).filter((c) => c !== clip);
          others.splice(idx, 0, clip);
          others.forEach((c, i) => (c.idx = i));
        }
        return ok({ clip });
      }
      case 'set_transition': {
        const transition =
          args.type === 'none' ? null : { type: args.type, duration_sec: args.duration_sec ?? 1 };
        const targets =
          args.clip_id === 'all'
            ? this.track('video').slice(1)
            : this.clips.filter((c) => c.id === args.clip_id);
        if (targets.length === 0) return { ok: false, error: 'clip not found' };
        for (const clip of targets) clip.transition_in = transition;
        return ok({ clips: targets });
      }
      case 'remove_clip': {
        const clip = this.clips.find((c) => c.id === args.clip_id);
        if (!clip) return { ok: false, error: 'clip not found' };
        this.clips = this.clips.filter((c) => c !== clip);
        this.renumber(clip.track);
        return ok({ id: clip.id, deleted: true });
      }
      case 'append_context':
        this.context += String(args.text);
        return ok({ context_md: this.context });
      case 'set_aspect_ratio': {
        const from = this.aspectRatio;
        this.aspectRatio = String(args.aspect_ratio);
        return ok({ video_id: VIDEO_ID, from, to: this.aspectRatio });
      }
      case 'export_video': {
        const clips = this.track('video').length;
        if (clips === 0)
          return { ok: false, error: 'no_video_clips: The video has no clip on its video track' };
        return ok({
          asset_id: `va_${++this.counter}`,
          video_url: `https://x.test/media/med_export_${this.counter}.mp4`,
          duration_sec: clips * 5,
          video_clip_count: clips,
          audio_overlay_count: 0,
        });
      }
      default:
        return { ok: false, error: `unhandled tool ${name}` };
    }
  }
}

const agent = createBuiltinAgent();

/** One turn through the agent: checks the reply was said once, whole, and ends with a question. */
async function turn(editor: FakeEditor, instruction: string, references: AgentAsset[] = []): Promise<string> {
  editor.startTurn();
  const said: string[] = [];
  const reply = await agent.runTurn(
    {
      instruction,
      references,
      project: { id: 'vp_1', name: 'Test', aspect_ratio: '9:16', context_md: editor.context },
      video: { id: VIDEO_ID, name: 'Main video', aspect_ratio: editor.aspectRatio },
      history: [],
      library: [],
      timeline: [],
    },
    editor,
    { say: (text) => said.push(text), signal: new AbortController().signal },
  );
  assert.deepEqual(said, [reply.text], 'the reply is said exactly once, whole');
  assert.match(reply.text, /\?$/, `the reply ends with a question: ${reply.text}`);
  const generations = editor.calls.filter((c) => MEDIA_TOOLS.includes(c.name as AgentToolName));
  assert.ok(generations.length <= 1, 'at most one generation per turn');
  return reply.text;
}

const LIGHTHOUSE = storyboardScenePrompts('a lighthouse at dawn', 3);

/** An editor whose video track holds the three lighthouse scenes. */
async function withThreeScenes(): Promise<FakeEditor> {
  const editor = new FakeEditor();
  await turn(editor, 'a 3-scene video about a lighthouse at dawn');
  for (let i = 0; i < 3; i++) await turn(editor, 'continue');
  assert.deepEqual(editor.videoTrack(), LIGHTHOUSE);
  return editor;
}

describe('builtin director: storyboard', () => {
  it('writes a numbered storyboard to the project context and generates nothing for a video request', async () => {
    const editor = new FakeEditor();
    const reply = await turn(editor, 'a 3-scene video about a lighthouse at dawn');
    assert.deepEqual(
      editor.calls.map((c) => c.name),
      ['append_context'],
    );
    assert.match(editor.context, /^## Storyboard: a lighthouse at dawn\n\n1\. Establishing shot/);
    assert.deepEqual(parseLastStoryboard(editor.context), {
      subject: 'a lighthouse at dawn',
      scenes: LIGHTHOUSE,
    });
    assert.match(LIGHTHOUSE[1]!, /^Close-up detail of a lighthouse at dawn/);
    assert.match(LIGHTHOUSE[2]!, /^Closing shot of a lighthouse at dawn/);
    assert.match(reply, /Shall I generate scene 1\?$/);
    for (const scene of LIGHTHOUSE) assert.ok(reply.includes(scene), 'the reply lists every scene');
  });

  it('generates exactly one scene per "continue" and places it at the end of the video track', async () => {
    const editor = new FakeEditor();
    await turn(editor, 'a 3-scene video about a lighthouse at dawn');
    const replies: string[] = [];
    for (const [i, answer] of ['continue', 'Yes', 'go on'].entries()) {
      replies.push(await turn(editor, answer));
      assert.deepEqual(editor.callsOf('generate_video'), [
        { prompt: LIGHTHOUSE[i], duration_seconds: 5, resolution: '480p' },
      ]);
      const created = editor.assets.at(-1)!.id;
      assert.deepEqual(editor.callsOf('add_clip'), [{ track: 'video', asset_id: created }]);
      assert.deepEqual(editor.videoTrack(), LIGHTHOUSE.slice(0, i + 1));
    }
    assert.match(replies[0]!, /^Scene 1 of 3 is on the timeline\..*Shall I continue with scene 2\?$/);
    assert.match(replies[1]!, /^Scene 2 of 3 is on the timeline\..*Shall I continue with scene 3\?$/);
    assert.match(
      replies[2]!,
      /All 3 scenes are on the timeline\. Shall I export it, or would you like changes\?$/,
    );
  });

  it('plans three scenes when no number is given and understands numbers written as words', async () => {
    assert.deepEqual(parseDirectorIntent('Make a video about a cat on a windowsill.'), {
      kind: 'storyboard',
      subject: 'a cat on a windowsill',
      scenes: 3,
      aspect_ratio: null,
    });
    assert.deepEqual(parseDirectorIntent('Create a four scene film about a busy harbour, please'), {
      kind: 'storyboard',
      subject: 'a busy harbour',
      scenes: 4,
      aspect_ratio: null,
    });
    assert.deepEqual(parseDirectorIntent('a vertical video about a square in Rome in 2 scenes'), {
      kind: 'storyboard',
      subject: 'a square in Rome',
      scenes: 2,
      aspect_ratio: '9:16',
    });
    assert.deepEqual(parseDirectorIntent('I want a new video'), {
      kind: 'storyboard',
      subject: '',
      scenes: 3,
      aspect_ratio: null,
    });
  });

  it('asks what the video is about when a video is requested without a subject', async () => {
    const editor = new FakeEditor();
    const reply = await turn(editor, 'make a video');
    assert.deepEqual(editor.calls, []);
    assert.match(reply, /What should the video be about\?$/);
  });

  it('answers a "continue" after the last scene without generating anything', async () => {
    const editor = await withThreeScenes();
    const reply = await turn(editor, 'next');
    assert.deepEqual(editor.callsOf('generate_video'), []);
    assert.deepEqual(editor.callsOf('add_clip'), []);
    assert.match(reply, /All 3 scenes .* already generated/);
  });

  it('asks for a subject when "continue" comes before any storyboard', async () => {
    const editor = new FakeEditor();
    const reply = await turn(editor, 'ok');
    assert.deepEqual(editor.calls, []);
    assert.match(reply, /no storyboard/);
  });

  it('reports a failed generation plainly, adds no clip, and offers the same scene again', async () => {
    const editor = new FakeEditor();
    await turn(editor, 'a 3-scene video about a lighthouse at dawn');
    editor.failNextGeneration = 'generation failed: provider timed out';
    const reply = await turn(editor, 'continue');
    assert.deepEqual(editor.callsOf('add_clip'), []);
    assert.deepEqual(editor.clips, []);
    assert.match(reply, /scene 1 of 3 failed: generation failed: provider timed out\. Nothing was added/);
    assert.match(reply, /Shall I try scene 1 again\?$/);

    await turn(editor, 'yes');
    assert.deepEqual(editor.callsOf('generate_video')[0]!.prompt, LIGHTHOUSE[0]);
    assert.deepEqual(editor.videoTrack(), [LIGHTHOUSE[0]]);
  });

  it('names the generated asset when it cannot be placed, and moves on to the next scene afterwards', async () => {
    const editor = new FakeEditor();
    await turn(editor, 'a 2-scene video about a kite');
    editor.failNextAddClip = 'video track is locked';
    const reply = await turn(editor, 'continue');
    const generated = editor.assets.at(-1)!.id;
    assert.match(
      reply,
      new RegExp(`generated as ${generated}, but I couldn't add it.*video track is locked`),
    );
    await turn(editor, 'continue');
    assert.equal(editor.callsOf('generate_video')[0]!.prompt, storyboardScenePrompts('a kite', 2)[1]);
  });

  it('never regenerates a scene whose clip the user removed', async () => {
    const editor = new FakeEditor();
    await turn(editor, 'a 3-scene video about a lighthouse at dawn');
    await turn(editor, 'continue');
    await turn(editor, 'continue');
    await turn(editor, 'remove clip 1');
    await turn(editor, 'continue');
    assert.deepEqual(editor.videoTrack(), [LIGHTHOUSE[1], LIGHTHOUSE[2]]);
  });

  it('follows the last storyboard of the context and reads a timeline answered as a flat clip list', async () => {
    const editor = new FakeEditor();
    editor.timelineShape = 'clips';
    editor.context = '# Brand notes\n\nWarm colours only.';
    await turn(editor, 'a 2-scene video about a red kite');
    await turn(editor, 'a 2-scene video about a paper boat');
    assert.match(editor.context, /^# Brand notes\n\nWarm colours only\.\n\n## Storyboard: a red kite/);
    const reply = await turn(editor, 'continue');
    assert.deepEqual(editor.videoTrack(), [storyboardScenePrompts('a paper boat', 2)[0]]);
    assert.match(reply, /^Scene 1 of 2 is on the timeline/);
  });
});

describe('builtin director: edits', () => {
  it('removes the clip at the 1-based position the user names', async () => {
    const editor = await withThreeScenes();
    const second = editor.track('video')[1]!.id;
    const reply = await turn(editor, 'Remove clip 2');
    assert.deepEqual(editor.callsOf('remove_clip'), [{ clip_id: second }]);
    assert.deepEqual(editor.videoTrack(), [LIGHTHOUSE[0], LIGHTHOUSE[2]]);
    assert.match(reply, /Removed clip 2; the video track now has 2 clips\./);
  });

  it('moves a clip to the start, the end, a position, or before another clip', async () => {
    const editor = await withThreeScenes();
    const [a, b, c] = LIGHTHOUSE;
    await turn(editor, 'move clip 3 to the start');
    assert.deepEqual(editor.callsOf('update_clip'), [{ clip_id: editor.track('video')[0]!.id, idx: 0 }]);
    assert.deepEqual(editor.videoTrack(), [c, a, b]);
    await turn(editor, 'Move the first clip to the end.');
    assert.deepEqual(editor.videoTrack(), [a, b, c]);
    await turn(editor, 'move clip 1 to position 2');
    assert.deepEqual(editor.videoTrack(), [b, a, c]);
    await turn(editor, 'move clip 3 before clip 1');
    assert.deepEqual(editor.videoTrack(), [c, b, a]);
    await turn(editor, 'move clip 1 after clip 3');
    assert.deepEqual(editor.videoTrack(), [b, a, c]);
    const reply = await turn(editor, 'move clip 1 to the beginning');
    assert.deepEqual(editor.callsOf('update_clip'), []);
    assert.match(reply, /already at position 1/);
  });

  it('answers "there is no clip N" for a number beyond the track and changes nothing', async () => {
    const editor = await withThreeScenes();
    for (const instruction of ['delete clip 7', 'move clip 4 to the start', 'move clip 1 to position 9']) {
      const reply = await turn(editor, instruction);
      assert.deepEqual(
        editor.calls.map((c) => c.name),
        ['get_timeline'],
        instruction,
      );
      assert.match(reply, /There is no (clip|position) \d+ — the video track has 3 clips\./);
    }
    assert.deepEqual(editor.videoTrack(), LIGHTHOUSE);
  });

  it('changes the aspect ratio for a written ratio or an orientation, and refuses ratios a video cannot have', async () => {
    const editor = new FakeEditor();
    const cases: [string, string][] = [
      ['make it 16:9', '16:9'],
      ['Change the aspect ratio to 1:1', '1:1'],
      ['make it vertical', '9:16'],
      ['square', '1:1'],
      ['switch to 4:5 please', '4:5'],
    ];
    for (const [instruction, ratio] of cases) {
      await turn(editor, instruction);
      assert.equal(editor.aspectRatio, ratio, instruction);
    }
    const reply = await turn(editor, 'make it 21:9');
    assert.deepEqual(editor.calls, []);
    assert.equal(editor.aspectRatio, '4:5');
    assert.match(reply, /21:9 is not one of them/);
  });

  it("adds this turn's reference image as scene 2", async () => {
    const editor = await withThreeScenes();
    const image = editor.addAsset('image', 'import');
    const reply = await turn(editor, 'add the image as scene 2', [image]);
    assert.deepEqual(editor.callsOf('add_clip'), [{ track: 'video', asset_id: image.id, idx: 1 }]);
    assert.deepEqual(editor.videoTrack(), [LIGHTHOUSE[0], image.id, LIGHTHOUSE[1], LIGHTHOUSE[2]]);
    assert.match(reply, new RegExp(`Added ${image.id} as scene 2`));
  });

  it('adds the newest image of the library as scene 2 when the turn sent none', async () => {
    const editor = await withThreeScenes();
    editor.addAsset('image', 'upload');
    const newest = editor.addAsset('image', 'upload');
    editor.addAsset('audio', 'upload');
    await turn(editor, 'Add the picture as the second scene');
    assert.deepEqual(editor.callsOf('add_clip'), [{ track: 'video', asset_id: newest.id, idx: 1 }]);
  });

  it('asks for an image when "the image" names nothing', async () => {
    const editor = new FakeEditor();
    const reply = await turn(editor, 'add the image as scene 1');
    assert.deepEqual(editor.callsOf('add_clip'), []);
    assert.match(reply, /Which image should I use\?$/);
  });

  it('puts a named asset on the music, voice or sfx track', async () => {
    const editor = new FakeEditor();
    const cases: [string, string][] = [
      ['use {id} as music', 'music'],
      ['Use {id} as the music', 'music'],
      ['use {id} as voice', 'voice'],
      ['use {id} as the voiceover', 'voice'],
      ['use {id} as sfx', 'sfx'],
    ];
    for (const [template, track] of cases) {
      const audio = editor.addAsset('audio');
      const reply = await turn(editor, template.replace('{id}', audio.id));
      assert.deepEqual(editor.callsOf('add_clip'), [{ track, asset_id: audio.id }], template);
      assert.match(reply, new RegExp(`${audio.id} is now on the`));
    }
  });

  it('says plainly when a tool refuses an edit', async () => {
    const editor = new FakeEditor();
    const reply = await turn(editor, 'use va_missing as music');
    assert.match(reply, /I couldn't put va_missing on the music track: asset not found\./);
  });
});

describe('builtin director: everything else', () => {
  it('explains what it can do for an unknown request, without tools', async () => {
    const editor = new FakeEditor();
    const reply = await turn(editor, 'what is the weather like?');
    assert.deepEqual(editor.calls, []);
    assert.match(reply, /remove clip 2/);
    assert.match(reply, /What would you like to do\?$/);
  });

  it('asks what to do with images sent without words, placing nothing', async () => {
    const editor = new FakeEditor();
    const image = editor.addAsset('image', 'import');
    const reply = await turn(editor, '', [image]);
    assert.deepEqual(editor.calls, []);
    assert.match(reply, new RegExp(image.id));
  });

  it('exports on "export it": the export_video tool, then the link', async () => {
    const editor = await withThreeScenes();
    const reply = await turn(editor, 'export it');
    assert.deepEqual(editor.calls, [{ name: 'export_video', args: {} }]);
    assert.match(
      reply,
      /^Here is your video \(15 s, 3 clips\): https:\/\/x\.test\/media\/med_export_\d+\.mp4 /,
    );
    assert.match(reply, /Would you like any changes\?$/);
    await turn(editor, 'Export the video, cropped to fill.');
    assert.deepEqual(editor.calls, [{ name: 'export_video', args: { fit: 'fill' } }]);
  });

  it('says why when there is nothing to export', async () => {
    const editor = new FakeEditor();
    const reply = await turn(editor, 'export the video');
    assert.deepEqual(
      editor.calls.map((c) => c.name),
      ['export_video'],
    );
    assert.equal(
      reply,
      "I couldn't export the video: no_video_clips: The video has no clip on its video track. What would you like to do?",
    );
  });

  it('passes what follows "continue" to the scene prompt, and still counts that scene as done', async () => {
    const editor = new FakeEditor();
    await turn(editor, 'a 3-scene video about a lighthouse at dawn');
    const reply = await turn(editor, 'continue with the sunset!');
    assert.deepEqual(editor.callsOf('generate_video'), [
      { prompt: `${LIGHTHOUSE[0]}; the sunset`, duration_seconds: 5, resolution: '480p' },
    ]);
    assert.match(reply, /^Scene 1 of 3 is on the timeline\./);
    await turn(editor, 'Next!');
    assert.deepEqual(editor.callsOf('generate_video'), [
      { prompt: LIGHTHOUSE[1], duration_seconds: 5, resolution: '480p' },
    ]);
    editor.failNextGeneration = 'the job failed';
    await turn(editor, 'continue [sandbox:fail]');
    assert.equal(editor.callsOf('generate_video')[0]!.prompt, `${LIGHTHOUSE[2]}; [sandbox:fail]`);
    await turn(editor, 'go on please.');
    assert.equal(editor.callsOf('generate_video')[0]!.prompt, LIGHTHOUSE[2]);
    assert.deepEqual(editor.videoTrack(), [`${LIGHTHOUSE[0]}; the sunset`, LIGHTHOUSE[1], LIGHTHOUSE[2]]);
  });

  it('says it cannot do what it does not understand, and lists what it can (export included)', async () => {
    const editor = new FakeEditor();
    const reply = await turn(editor, 'make the colours warmer');
    assert.deepEqual(editor.calls, []);
    assert.match(
      reply,
      /^I can't do that myself \(or I didn't understand it\)\. I'm the built-in director\./,
    );
    for (const phrase of [
      'continue',
      'remove clip 2',
      'make it 16:9',
      'export it',
      'add a title Lighthouse at dawn',
      'add a caption Low tide at 5 seconds',
      'crossfade between the scenes',
      'fade to black between scenes',
      'slow zoom on the images',
      'play clip 2 at half speed',
      'fade out the music at the end',
    ])
      assert.ok(reply.includes(`"${phrase}"`), phrase);
    const help = await turn(editor, 'help');
    assert.match(help, /^I'm the built-in director\./);
    assert.match(help, /"export it"/);
  });

  it('reads clip numbers written as digits, words and ordinals', () => {
    assert.deepEqual(parseDirectorIntent('delete clip two'), { kind: 'remove_clip', clip: 2 });
    assert.deepEqual(parseDirectorIntent('remove the 3rd clip'), { kind: 'remove_clip', clip: 3 });
    assert.deepEqual(parseDirectorIntent('Remove the last clip'), { kind: 'remove_clip', clip: 'last' });
    assert.deepEqual(parseDirectorIntent('move clip #2 to the end'), {
      kind: 'move_clip',
      clip: 2,
      to: { kind: 'end' },
    });
  });
});

describe('builtin director: the look of the video', () => {
  /** The three lighthouse scenes with an uploaded image as scene 2 (4 clips: video, image, video, video). */
  async function withImageScene(): Promise<{ editor: FakeEditor; image: AgentAsset }> {
    const editor = await withThreeScenes();
    const image = editor.addAsset('image');
    await turn(editor, 'add the image as scene 2', [image]);
    assert.equal(editor.track('video')[1]!.asset_id, image.id);
    return { editor, image };
  }

  it('"add a title <text>" puts a title at 0 s; "add a caption <text> at <n> seconds" a caption there', async () => {
    const editor = new FakeEditor();
    const title = await turn(editor, 'add a title Lighthouse at Dawn');
    assert.deepEqual(editor.callsOf('add_text'), [
      { text: 'Lighthouse at Dawn', style: 'title', start_sec: 0 },
    ]);
    assert.equal(
      title,
      'Added the title "Lighthouse at Dawn" at 0 s, for 3 s. What would you like to change next?',
    );
    const caption = await turn(editor, 'add a caption "Low tide" at 5 seconds for 4 seconds');
    assert.deepEqual(editor.callsOf('add_text'), [
      { text: 'Low tide', style: 'caption', start_sec: 5, duration_sec: 4 },
    ]);
    assert.match(caption, /^Added the caption "Low tide" at 5 s, for 4 s\./);
    const next = await turn(editor, 'add a caption The end');
    assert.deepEqual(editor.callsOf('add_text'), [{ text: 'The end', style: 'caption' }]);
    assert.match(next, /right after the previous text/);
    const empty = await turn(editor, 'add a title');
    assert.deepEqual(editor.calls, []);
    assert.match(empty, /What should the title say\?$/);
  });

  it('"crossfade between the scenes" sets a 1 s fade on every cut; "fade to black between scenes" a fadeblack', async () => {
    const { editor } = await withImageScene();
    const reply = await turn(editor, 'crossfade between the scenes');
    assert.deepEqual(editor.callsOf('set_transition'), [{ clip_id: 'all', type: 'fade', duration_sec: 1 }]);
    assert.equal(
      reply,
      'Added a 1 s crossfade on every cut (3); each transition overlaps two clips, so the video is 3 s shorter. What would you like to change next?',
    );
    assert.deepEqual(
      editor.track('video').map((clip) => clip.transition_in ?? null),
      [null, ...Array(3).fill({ type: 'fade', duration_sec: 1 })],
    );
    await turn(editor, 'fade to black between scenes');
    assert.deepEqual(editor.callsOf('set_transition'), [
      { clip_id: 'all', type: 'fadeblack', duration_sec: 1 },
    ]);
    await turn(editor, 'a 1.5 second dissolve into clip 3');
    const third = editor.track('video')[2]!.id;
    assert.deepEqual(editor.callsOf('set_transition'), [{ clip_id: third, type: 'fade', duration_sec: 1.5 }]);
    const removed = await turn(editor, 'no transitions');
    assert.deepEqual(editor.callsOf('set_transition'), [{ clip_id: 'all', type: 'none' }]);
    assert.match(removed, /^Removed the transitions: every cut is a hard cut again\./);
  });

  it('shortens a transition to half of the shortest clip it joins, and says so', async () => {
    const { editor } = await withImageScene();
    editor.track('video')[1]!.duration_sec = 1.5; // the image shows for 1.5 s
    const reply = await turn(editor, 'a 2 second crossfade between the scenes');
    assert.deepEqual(editor.callsOf('set_transition'), [{ clip_id: 'all', type: 'fade', duration_sec: 0.7 }]);
    assert.match(reply, /2 s would not fit the shortest clip, so I made it 0\.7 s/);
  });

  it('answers that there is no cut on a track of one clip, calling no edit', async () => {
    const editor = new FakeEditor();
    editor.clips.push({
      id: 'vc_only',
      video_id: VIDEO_ID,
      track: 'video',
      idx: 0,
      asset_id: editor.addAsset('video').id,
    });
    const reply = await turn(editor, 'crossfade between the scenes');
    assert.deepEqual(editor.callsOf('set_transition'), []);
    assert.match(reply, /^There is no cut yet: the video track has 1 clip\./);
  });

  it('"slow zoom on the images" zooms every image and only images; a video clip named is answered', async () => {
    const { editor, image } = await withImageScene();
    const reply = await turn(editor, 'slow zoom on the images');
    const imageClip = editor.track('video').find((clip) => clip.asset_id === image.id)!;
    assert.deepEqual(editor.callsOf('update_clip'), [{ clip_id: imageClip.id, motion: 'zoom_in' }]);
    assert.equal(reply, 'Added a slow zoom in to the image (clip 2). What would you like to change next?');
    const onVideo = await turn(editor, 'zoom in on clip 1');
    assert.deepEqual(editor.callsOf('update_clip'), []);
    assert.match(onVideo, /^Clip 1 is a video: zoom and pan move still images only\./);
    const none = await turn(new FakeEditor(), 'slow zoom on the images');
    assert.match(none, /^There are no images on the video track/);
  });

  it('"play clip <n> at half speed" sets the speed of a video clip, and explains an image has none', async () => {
    const { editor } = await withImageScene();
    const reply = await turn(editor, 'play clip 1 at half speed');
    assert.deepEqual(editor.callsOf('update_clip'), [{ clip_id: editor.track('video')[0]!.id, speed: 0.5 }]);
    assert.equal(
      reply,
      'Clip 1 now plays at half speed, so it now lasts 10 s. What would you like to change next?',
    );
    const image = await turn(editor, 'play clip 2 at double speed');
    assert.deepEqual(editor.callsOf('update_clip'), []);
    assert.match(image, /^Clip 2 is an image: it has no speed/);
    const missing = await turn(editor, 'play clip 9 at half speed');
    assert.match(missing, /^There is no clip 9 — the video track has 4 clips\./);
  });

  it('"fade out the music at the end" fades the last music clip out over 2 s, and says when there is no music', async () => {
    const editor = await withThreeScenes();
    const none = await turn(editor, 'fade out the music at the end');
    assert.deepEqual(editor.callsOf('update_clip'), []);
    assert.match(none, /^There is no music on the timeline yet/);
    const song = editor.addAsset('audio');
    await turn(editor, `use ${song.id} as music`);
    const reply = await turn(editor, 'fade out the music at the end');
    const music = editor.track('music')[0]!;
    assert.deepEqual(editor.callsOf('update_clip'), [{ clip_id: music.id, fade_out_sec: 2 }]);
    assert.equal(reply, 'The music now fades out over its last 2 s. What would you like to change next?');
    await turn(editor, 'fade in the music over 3 seconds');
    assert.deepEqual(editor.callsOf('update_clip'), [{ clip_id: music.id, fade_in_sec: 3 }]);
  });

  it('"export a preview" exports at the preview quality', async () => {
    const editor = await withThreeScenes();
    const reply = await turn(editor, 'export a preview');
    assert.deepEqual(editor.calls, [{ name: 'export_video', args: { quality: 'preview' } }]);
    assert.match(reply, /^Here is a preview of your video \(360p\) \(15 s, 3 clips\): /);
  });

  it('passes a refusal of the runtime on in its own words', async () => {
    const { editor } = await withImageScene();
    const original = editor.call.bind(editor);
    editor.call = (name, args) =>
      name === 'set_transition'
        ? Promise.resolve({ ok: false, error: 'transition_in is longer than half of a clip it joins' })
        : original(name, args);
    const reply = await turn(editor, 'crossfade between the scenes');
    assert.equal(
      reply,
      "I couldn't add the crossfade: transition_in is longer than half of a clip it joins. What would you like to change next?",
    );
  });
});

describe('builtin director: reading contexts and tool results', () => {
  it('reads the last storyboard of a context a user has edited', () => {
    const md = [
      '## Storyboard: old idea',
      '1. Old scene',
      '',
      '## Storyboard: a lighthouse',
      'Some notes the user added.',
      '1. First scene',
      '2) Second scene',
      '- Scene 3: Third scene',
      '',
      '## Music',
      '1. Not a scene',
    ].join('\n');
    assert.deepEqual(parseLastStoryboard(md), {
      subject: 'a lighthouse',
      scenes: ['First scene', 'Second scene', 'Third scene'],
    });
    assert.equal(parseLastStoryboard('# Notes\n\nNothing here.'), null);
  });

  it('accepts the plausible shapes of timeline, library and generation results', () => {
    const clip = (id: string, idx: number, track = 'video', video_id = 'vv_1') => ({
      id,
      idx,
      track,
      video_id,
      asset_id: `va_${id}`,
    });
    const expected = [
      { id: 'a', idx: 0, asset_id: 'va_a' },
      { id: 'b', idx: 1, asset_id: 'va_b' },
    ];
    assert.deepEqual(
      readVideoTrackResult({ tracks: { video: [clip('b', 1), clip('a', 0)] } }, 'vv_1'),
      expected,
    );
    assert.deepEqual(
      readVideoTrackResult(
        { clips: [clip('b', 1), clip('m', 0, 'music'), clip('x', 0, 'video', 'vv_2'), clip('a', 0)] },
        'vv_1',
      ),
      expected,
    );
    assert.deepEqual(
      readVideoTrackResult({ tracks: [{ track: 'video', clips: [clip('a', 0), clip('b', 1)] }] }, 'vv_1'),
      expected,
    );
    assert.deepEqual(readVideoTrackResult('nonsense', 'vv_1'), []);
    assert.deepEqual(
      readLibraryResult([{ id: 'va_1', kind: 'video', source: 'agent_generate', metadata: { prompt: 'p' } }]),
      [{ id: 'va_1', kind: 'video', source: 'agent_generate', prompt: 'p', duration_sec: null }],
    );
    assert.equal(readGeneratedAssetId({ asset: { id: 'va_9' }, job_id: 'j', credits: 1 }), 'va_9');
    assert.equal(readGeneratedAssetId({}), null);
  });

  it('counts a scene as done when the library lists its prompt shortened', async () => {
    const editor = new FakeEditor();
    await turn(editor, 'a 2-scene video about a lighthouse at dawn');
    const [first] = storyboardScenePrompts('a lighthouse at dawn', 2);
    editor.addAsset('video', 'agent_generate', `${first!.slice(0, 30)}…`);
    await turn(editor, 'continue');
    assert.equal(
      editor.callsOf('generate_video')[0]!.prompt,
      storyboardScenePrompts('a lighthouse at dawn', 2)[1],
    );
  });
});
