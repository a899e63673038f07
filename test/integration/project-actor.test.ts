// The project actor on a real MongoDB-wire server (in-process transport): events numbered without gaps and
// published in order, revisions and If-Match, redelivered commands applied once, the turn queue with its
// leases, and project deletion failing a running turn. The same actor runs over JetStream in the cluster tests.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createManualClock } from '../../src/platform/core/clock.ts';
import type { AppError } from '../../src/platform/core/errors.ts';
import { newId } from '../../src/platform/core/ids.ts';
import type { ProjectEvent } from '../../actors/ports/event-history.ts';
import { actorTopic } from '../../actors/runtime/define.ts';
import { PROJECT_ACTOR } from '../../actors/project.ts';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { addBareImage, startEditorStack, type EditorStack } from '../helpers/editor-stack.ts';

const LEASE_MS = 5000;

describe('project actor', () => {
  let mongo: TestMongo;
  let stack: EditorStack;
  const clock = createManualClock(Date.UTC(2026, 10, 24));
  const userId = newId('usr');

  before(async () => {
    mongo = await startMongo();
    stack = await startEditorStack({
      mongoUrl: mongo.uri,
      db: 'actor',
      clock,
      turnLeaseMs: LEASE_MS,
      turnQueueMax: 2,
    });
  });
  after(async () => {
    await stack?.close();
    await mongo?.stop();
  });

  async function newProject() {
    const { project } = await stack.editor.createProject(userId, { aspect_ratio: '9:16' });
    const record = (await stack.repositories.projects.get(project.id))!;
    return { id: project.id, videoId: record.videos[0]!.id };
  }

  async function addImage(projectId: string) {
    return addBareImage(stack, projectId, userId);
  }

  const addClip = (
    projectId: string,
    videoId: string,
    assetId: string,
    extra: Record<string, unknown> = {},
  ) =>
    stack.commands.add_clip(projectId, {
      op_id: newId('op'),
      clip_id: newId('vc'),
      video_id: videoId,
      track: 'video',
      asset_id: assetId,
      ...extra,
    });

  it('numbers events per project without gaps, publishes them in order, and bumps the revision on every change', async () => {
    const { id, videoId } = await newProject();
    const heard: ProjectEvent[] = [];
    const unsubscribe = stack.events.subscribe(actorTopic(PROJECT_ACTOR, id), (event) =>
      heard.push(event as ProjectEvent),
    );
    const assetId = await addImage(id);
    const first = await addClip(id, videoId, assetId);
    await addClip(id, videoId, assetId, { idx: 0 });
    await stack.commands.remove_clip(id, { op_id: newId('op'), clip_id: first.clip.id });
    unsubscribe();
    assert.deepEqual(
      heard.map((event) => [event.seq, event.type, event.data.revision]),
      [
        [1, 'asset.created', 1],
        [2, 'clip.created', 2],
        [3, 'clip.created', 3],
        [4, 'clip.removed', 4],
      ],
    );
    assert.ok(heard.every((event) => event.turn_id === null && event.project_id === id));
    const stored = await stack.repositories.history.since(id, 0);
    assert.deepEqual(stored.events, heard);
    const project = (await stack.repositories.projects.get(id))!;
    assert.equal(project.seq, 4);
    assert.equal(project.revision, 4);
    assert.deepEqual(
      project.clips.map((clip) => clip.idx),
      [0],
    );
  });

  it('refuses a stale If-Match with the current revision and changes nothing', async () => {
    const { id, videoId } = await newProject();
    const assetId = await addImage(id);
    await addClip(id, videoId, assetId, { if_match: 1 });
    await assert.rejects(addClip(id, videoId, assetId, { if_match: 1 }), (error: AppError) => {
      assert.equal(error.status, 409);
      assert.equal(error.details.revision, 2);
      return true;
    });
    const project = (await stack.repositories.projects.get(id))!;
    assert.equal(project.clips.length, 1);
    assert.equal(project.seq, 2);
  });

  it('applies a redelivered command once and answers it as the first time', async () => {
    const { id, videoId } = await newProject();
    const assetId = await addImage(id);
    const message = {
      op_id: 'op_redelivered',
      clip_id: newId('vc'),
      video_id: videoId,
      track: 'video' as const,
      asset_id: assetId,
    };
    const once = await stack.commands.add_clip(id, message);
    assert.equal(once.events.length, 1);
    const again = await stack.commands.add_clip(id, message);
    assert.deepEqual(again, once, 'the same answer, its numbered events included (a turn builds on them)');
    let project = (await stack.repositories.projects.get(id))!;
    assert.equal(project.clips.length, 1);
    assert.equal(project.seq, 2);
    // Only the newest answer keeps its events (a redelivery is always of the newest command).
    await stack.commands.patch_project(id, { op_id: 'op_next', name: 'renamed' });
    const late = await stack.commands.add_clip(id, message);
    assert.deepEqual(late, { ...once, events: [] }, 'an older repeat: its events were published once');
    project = (await stack.repositories.projects.get(id))!;
    assert.equal(project.clips.length, 1);
    assert.equal(project.seq, 3);
    const kept = project.applied_ops.filter((op) => (op.result as { events: unknown[] }).events.length > 0);
    assert.deepEqual(
      kept.map((op) => op.op_id),
      ['op_next'],
      'the project document holds one answer’s events',
    );
  });

  it('keeps every track at idx 0..n-1 through inserts, moves and removals', async () => {
    const { id, videoId } = await newProject();
    const assetId = await addImage(id);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await addClip(id, videoId, assetId, { idx: (i * 7) % 4 })).clip.id);
    await stack.commands.update_clip(id, { op_id: newId('op'), clip_id: ids[0]!, idx: 99 });
    await stack.commands.update_clip(id, { op_id: newId('op'), clip_id: ids[5]!, idx: 0 });
    await stack.commands.remove_clip(id, { op_id: newId('op'), clip_id: ids[2]! });
    const project = (await stack.repositories.projects.get(id))!;
    const order = [...project.clips].sort((a, b) => a.idx - b.idx);
    assert.deepEqual(
      order.map((clip) => clip.idx),
      [0, 1, 2, 3, 4],
    );
    assert.equal(order[0]!.id, ids[5]);
    assert.equal(order.at(-1)!.id, ids[0]);
    assert.ok(!order.some((clip) => clip.id === ids[2]));
  });

  it('grants turns one at a time, first come first served, and refuses past the queue limit', async () => {
    const { id, videoId } = await newProject();
    const request = (turn: string) =>
      stack.commands.request_turn(id, {
        op_id: `${turn}:request`,
        turn_id: turn,
        video_id: videoId,
        key_id: 'key_1',
        node_id: 'node_a',
      });
    assert.deepEqual(await request('turn_a'), { status: 'granted' });
    assert.deepEqual(await request('turn_b'), { status: 'queued', position: 1 });
    assert.deepEqual(await request('turn_c'), { status: 'queued', position: 2 });
    assert.deepEqual(await request('turn_d'), { status: 'full' });
    assert.deepEqual(
      await request('turn_b'),
      { status: 'queued', position: 1 },
      'asking again changes nothing',
    );
    const finish = (turn: string) =>
      stack.commands.finish_turn(id, {
        op_id: `${turn}:finish`,
        turn_id: turn,
        outcome: 'completed',
        data: { assistant_text: 'done', credits_charged: 5 },
        messages: [],
      });
    await finish('turn_a');
    assert.deepEqual(await stack.commands.turn_status(id, { turn_id: 'turn_b' }), { status: 'granted' });
    assert.deepEqual(await stack.commands.turn_status(id, { turn_id: 'turn_c' }), {
      status: 'queued',
      position: 1,
    });
    assert.deepEqual(await finish('turn_c'), { events: [], revision: 0 }, 'a queued turn withdraws quietly');
    assert.deepEqual(await stack.commands.turn_status(id, { turn_id: 'turn_c' }), { status: 'gone' });
  });

  it('fails a started turn whose lease lapsed, grants the next one, and refuses the lost turn’s commands', async () => {
    const { id, videoId } = await newProject();
    const assetId = await addImage(id);
    for (const turn of ['turn_x', 'turn_y']) {
      await stack.commands.request_turn(id, {
        op_id: `${turn}:request`,
        turn_id: turn,
        video_id: videoId,
        key_id: 'key_1',
        node_id: 'node_a',
      });
    }
    await stack.commands.begin_turn(id, {
      op_id: 'turn_x:begin',
      turn_id: 'turn_x',
      instruction: 'hello',
      image_urls: [],
    });
    clock.advance(LEASE_MS - 1);
    assert.deepEqual(await stack.commands.renew_turn(id, { turn_id: 'turn_x' }), { ok: true });
    const seenInTime = clock.now() + LEASE_MS - 1; // a sweep that saw the lease still running …
    clock.advance(LEASE_MS + 1); // … delivered late (a stalled partition): the turn is not failed for it
    assert.deepEqual(await stack.commands.expire_turn(id, { seen_at: seenInTime }), { expired: false });
    assert.deepEqual(await stack.commands.expire_turn(id, {}), { expired: true });
    assert.deepEqual(await stack.commands.turn_status(id, { turn_id: 'turn_y' }), { status: 'granted' });
    assert.deepEqual(await stack.commands.renew_turn(id, { turn_id: 'turn_x' }), { ok: false });
    await assert.rejects(
      addClip(id, videoId, assetId, { turn_id: 'turn_x' }),
      (error: AppError) => error.status === 409 && error.details.turn_lost === true,
    );
    const { events } = await stack.repositories.history.since(id, 0);
    const failed = events.find((event) => event.type === 'turn.failed');
    assert.equal(failed?.turn_id, 'turn_x');
    assert.equal(failed?.data.status, 500);
    assert.equal(
      (await stack.repositories.projects.expiredLeases(new Date(clock.now()), 10)).includes(id),
      false,
    );
  });

  it('owes back the charge of a granted turn that lapsed before it began, until the sweep settles it', async () => {
    const { id, videoId } = await newProject();
    await stack.commands.request_turn(id, {
      op_id: 'turn_unstarted:request',
      turn_id: 'turn_unstarted',
      video_id: videoId,
      key_id: 'key_1',
      node_id: 'node_dead',
    });
    clock.advance(LEASE_MS + 1);
    assert.deepEqual(await stack.commands.expire_turn(id, {}), { expired: true });
    const owing = await stack.repositories.projects.withRefundsDue(100);
    assert.deepEqual(
      owing.filter((one) => one.id === id).map((one) => one.refunds_due),
      [['turn_unstarted']],
    );
    const { events } = await stack.repositories.history.since(id, 0);
    assert.equal(events.filter((event) => event.turn_id === 'turn_unstarted').length, 0, 'it never began');
    assert.deepEqual(await stack.commands.refunds_settled(id, { turn_ids: ['turn_unstarted'] }), {
      settled: 1,
    });
    assert.equal(
      (await stack.repositories.projects.withRefundsDue(100)).some((one) => one.id === id),
      false,
    );
    assert.equal((await stack.repositories.projects.get(id))!.refunds_due, undefined);
  });

  it('fails the running turn when the project is deleted, and removes its documents', async () => {
    const { id, videoId } = await newProject();
    await addImage(id);
    await stack.commands.request_turn(id, {
      op_id: 'turn_del:request',
      turn_id: 'turn_del',
      video_id: videoId,
      key_id: 'key_1',
      node_id: 'node_a',
    });
    const heard: ProjectEvent[] = [];
    const unsubscribe = stack.events.subscribe(actorTopic(PROJECT_ACTOR, id), (event) =>
      heard.push(event as ProjectEvent),
    );
    const answer = await stack.commands.delete_project(id, { op_id: newId('op') });
    unsubscribe();
    assert.equal(answer.deleted, true);
    assert.deepEqual(answer.dropped, ['turn_del'], 'granted but never begun: its charge is owed back');
    assert.equal(answer.assets.length, 1);
    assert.deepEqual(
      heard.map((event) => [event.type, event.turn_id, event.data.status]),
      [
        ['turn.failed', 'turn_del', 404],
        ['project.deleted', null, undefined],
      ],
    );
    assert.equal(heard[1]!.seq, heard[0]!.seq + 1, 'the deletion is the project’s last seq');
    assert.equal(await stack.repositories.projects.get(id), null);
    assert.deepEqual(await stack.repositories.assets.listByProject(id), []);
    assert.deepEqual((await stack.repositories.history.since(id, 0)).events, []);
  });
});
