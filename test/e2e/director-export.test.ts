// The builtin director finishes the job (docs/editor.md): "continue" as people type it (trailing words reach the
// scene's prompt, sandbox markers included) and "export it", which runs the export_video tool and answers with
// a link that decodes; through REST with the events socket watching, and through MCP's video_editor_instruct.
// The service as a process with the sandbox provider (short timings).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, type RunningService } from '../helpers/service.ts';
import {
  accountClient,
  checkTurnAnswer,
  editorClient,
  editorUser,
  type EditorEvent,
  type InstructAnswer,
} from '../helpers/editor.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';
import { probeMedia } from '../helpers/ffprobe.ts';

const TURN_CREDITS = 5;
const MEDIA_LINK = /(https?:\/\/\S+\/media\/[A-Za-z0-9_.-]+\.mp4)/;

describe('the builtin director: continue phrases and export_video', () => {
  let mongo: TestMongo;
  let service: RunningService;
  const work = mkdtempSync(join(tmpdir(), 'mf-director-export-'));

  before(async () => {
    mongo = await startMongo();
    service = await startService({
      MONGO_URL: mongo.uri,
      MONGO_DB: 'director_export',
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
    rmSync(work, { recursive: true, force: true });
  });

  async function setUp(scopes?: string[]) {
    const user = await editorUser(service, { credits: 100_000, ...(scopes ? { scopes } : {}) });
    const editor = editorClient(() => service, user.token);
    const project = await editor.createProject({ name: 'Lighthouse' });
    const state = await editor.state(project.id);
    return {
      user,
      editor,
      account: accountClient(() => service, user.token),
      project,
      videoId: state.body.videos[0]!.id,
    };
  }

  /** Downloads a `/media/` link and decodes it with ffprobe. */
  async function probeLink(url: string) {
    const response = await fetch(url);
    assert.equal(response.status, 200, url);
    assert.equal(response.headers.get('content-type'), 'video/mp4');
    const path = join(work, `${Math.random().toString(36).slice(2)}.mp4`);
    writeFileSync(path, Buffer.from(await response.arrayBuffer()));
    return probeMedia(path);
  }

  const named = (events: EditorEvent[], type: string, name: string) =>
    events.filter((event) => event.type === type && event.data.name === name);

  it('"continue" with trailing words and a sandbox marker, then "export it": the link decodes, export_video on the socket', async () => {
    const { user, editor, account, project, videoId } = await setUp();
    const plan = await editor.instruct(project.id, {
      instruction: 'a 2-scene video about a lighthouse at dawn',
    });
    checkTurnAnswer(plan, project.id);
    assert.equal(plan.body.context_appended, true);

    // The marker reaches the scene's prompt: its job fails and is refunded; nothing lands on the timeline.
    const failing = await editor.instruct(project.id, { instruction: 'continue [sandbox:fail]' });
    const failed = checkTurnAnswer(failing, project.id);
    assert.equal(failed.mediaStarted.length, 1, failing.body.assistant_text);
    const generate = named(failing.body.agent_events, 'tool.started', 'generate_video')[0];
    assert.match(String((generate?.data.arguments as { prompt?: string }).prompt), /; \[sandbox:fail\]$/);
    assert.ok(failing.body.agent_events.some((event) => event.type === 'media.failed'));
    assert.deepEqual(failing.body.clips_created, []);
    assert.match(failing.body.assistant_text, /^Generating scene 1 of 2 failed/);

    // Words after the phrase are a note for the scene; punctuation and politeness are not.
    const sunset = await editor.instruct(project.id, { instruction: 'Continue with the sunset, please.' });
    checkTurnAnswer(sunset, project.id);
    assert.equal(sunset.body.clips_created.length, 1, sunset.body.assistant_text);
    assert.match(
      String(sunset.body.assets_created[0]!.metadata.prompt),
      /^Establishing shot of a lighthouse at dawn.*; the sunset$/,
    );
    const next = await editor.instruct(project.id, { instruction: 'Next!' });
    checkTurnAnswer(next, project.id);
    assert.equal(next.body.clips_created.length, 1, next.body.assistant_text);
    assert.match(
      String(next.body.assets_created[0]!.metadata.prompt),
      /^Closing shot of a lighthouse at dawn/,
    );

    const balanceBefore = await account.balance();
    const socket = await openEventsSocket(service.url, project.id, { token: user.token });
    try {
      const exported = await editor.instruct(project.id, { instruction: 'export it' });
      const checked = checkTurnAnswer(exported, project.id);
      const { body } = exported;
      assert.equal(checked.creditsCharged, TURN_CREDITS, 'an export costs nothing beyond the turn');
      assert.equal(await account.balance(), balanceBefore - TURN_CREDITS);
      assert.equal(body.media_gen_done, false, 'an export is not a media generation');
      assert.equal(checked.mediaStarted.length, 0);
      const link = MEDIA_LINK.exec(body.assistant_text)?.[1];
      assert.ok(link, body.assistant_text);
      assert.match(body.assistant_text, /^Here is your video \(10 s, 2 clips\): /);
      assert.match(body.assistant_text, /\?$/);
      const media = await probeLink(link);
      assert.ok(Math.abs(media.durationSeconds - 10) < 0.5, `duration ${media.durationSeconds}`);
      assert.ok(media.streams.some((stream) => stream.codecType === 'video' && stream.codecName === 'h264'));

      // The tool's events in the answer and on the socket; the export's own events on the socket.
      const started = named(body.agent_events, 'tool.started', 'export_video');
      const finished = named(body.agent_events, 'tool.finished', 'export_video');
      assert.equal(started.length, 1, JSON.stringify(body.agent_events.map((event) => event.type)));
      assert.deepEqual(started[0]!.data.arguments, {});
      assert.equal(finished.length, 1);
      assert.equal(finished[0]!.data.ok, true);
      assert.match(
        String(finished[0]!.data.summary),
        new RegExp(`^exported 10 s: ${link.replace(/[.?]/g, '\\$&')}$`),
      );
      await socket.waitFor(
        'export_video on the socket',
        (events) =>
          named(events, 'tool.finished', 'export_video').length === 1 &&
          events.some((event) => event.type === 'export.completed'),
      );
      const completed = socket.events.find((event) => event.type === 'export.completed')!;
      assert.equal(completed.data.video_url, link);
      assert.equal(completed.video_id, videoId);
      assert.equal(completed.turn_id, null, 'the export announces itself as REST exports do');

      // The same timeline exported again through REST answers the same asset (the same export service).
      const rest = await editor.exportVideo(project.id, {});
      assert.equal(rest.status, 200, JSON.stringify(rest.body));
      assert.equal(rest.body.video_url, link);
    } finally {
      await socket.close();
    }
  });

  it('"export the video" with nothing on the timeline says why, charging the turn only', async () => {
    const { editor, account, project } = await setUp();
    const before = await account.balance();
    const answer = await editor.instruct(project.id, { instruction: 'Export the video.' });
    checkTurnAnswer(answer, project.id);
    assert.equal(
      answer.body.assistant_text,
      "I couldn't export the video: no_video_clips: The video has no clip on its video track. What would you like to do?",
    );
    const finished = named(answer.body.agent_events, 'tool.finished', 'export_video');
    assert.equal(finished[0]?.data.ok, false);
    assert.equal(await account.balance(), before - TURN_CREDITS);
  });

  it('says what it cannot do and lists what it can, export included', async () => {
    const { editor, project } = await setUp();
    const answer = await editor.instruct(project.id, { instruction: 'make the colours warmer' });
    checkTurnAnswer(answer, project.id);
    assert.match(answer.body.assistant_text, /^I can't do that myself/);
    assert.match(answer.body.assistant_text, /"export it"/);
    assert.deepEqual(
      answer.body.agent_events.filter((event) => event.type === 'tool.started'),
      [],
    );
  });

  it('through MCP: video_editor_instruct "ok, continue" then "export it" answers the link', async () => {
    const { user, project } = await setUp(['video-editor:read', 'video-editor:write']);
    const client = new Client({ name: 'director-export', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${service.url}/api/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${user.token}` } },
      }),
    );
    try {
      await client.listTools(); // so the client checks results against the output schemas
      const instruct = async (instruction: string) => {
        const result = (await client.callTool(
          { name: 'video_editor_instruct', arguments: { project_id: project.id, instruction } },
          undefined,
          { timeout: 90_000 },
        )) as CallToolResult;
        assert.notEqual(result.isError, true, JSON.stringify(result.content));
        return result.structuredContent as unknown as InstructAnswer;
      };
      await instruct('a 1-scene video about a red kite');
      const scene = await instruct('ok, continue');
      assert.equal(scene.clips_created.length, 1, scene.assistant_text);
      const exported = await instruct('export it');
      const link = MEDIA_LINK.exec(exported.assistant_text)?.[1];
      assert.ok(link, exported.assistant_text);
      assert.equal(exported.media_gen_done, false);
      assert.equal(named(exported.agent_events, 'tool.finished', 'export_video')[0]?.data.ok, true);
      const media = await probeLink(link);
      assert.ok(Math.abs(media.durationSeconds - 5) < 0.5, `duration ${media.durationSeconds}`);
    } finally {
      await client.close();
    }
  });
});
