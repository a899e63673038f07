// The studio timeline's pure parts (web/src/studio/timeline-model.ts, edit-history.ts): lanes and names,
// seconds and pixels, snapping, the REST change each gesture and key makes, and undo/redo of those changes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Asset } from '../../web/src/api-types.ts';
import { assetView, clipView } from '../helpers/studio-views.ts';
import { placeClips, type PlacedClip } from '../../web/src/studio/placements.ts';
import {
  LANES,
  LANE_NAMES,
  FRAME_SEC,
  clipAddBody,
  clipLabel,
  inversePatch,
  keyCommand,
  laneClips,
  moveStepPatch,
  pxPerSecAt,
  pxToSec,
  reorderIdx,
  secToPx,
  snapTargets,
  snapTime,
  splitPlan,
  stepPlayhead,
  trimEndPatch,
  trimEndStepPatch,
  trimStartPatch,
} from '../../web/src/studio/timeline-model.ts';
import {
  dragEntry,
  dropEntry,
  moveStepEntry,
  splitAtEntry,
  splitTarget,
} from '../../web/src/studio/timeline-gestures.ts';
import {
  EditHistory,
  addEntry,
  callsOf,
  deleteEntry,
  patchEntry,
  splitEntry,
  type ResolvedCall,
} from '../../web/src/studio/edit-history.ts';

const asset = assetView;
const clip = clipView;

const ASSETS = [
  asset('va_red', 'image', { name: 'Red card' }),
  asset('va_film', 'video', { name: 'Harbour', duration_sec: 10 }),
  asset('va_voice', 'audio', { name: 'Narration', duration_sec: 8 }),
];
const CLIPS = [
  clip({ id: 'vc_a', track: 'video', idx: 0, asset_id: 'va_red', duration_sec: 3, trim_start_sec: 0 }),
  clip({
    id: 'vc_b',
    track: 'video',
    idx: 1,
    asset_id: 'va_film',
    duration_sec: 2.5,
    trim_start_sec: 1,
    speed: 1,
  }),
  clip({ id: 'vc_t', track: 'text', idx: 0, text: 'Hello\nworld', start_sec: 1, duration_sec: 2 }),
  clip({
    id: 'vc_v',
    track: 'voice',
    idx: 0,
    asset_id: 'va_voice',
    start_sec: 2,
    duration_sec: 4,
    trim_start_sec: 0,
  }),
];
const nameOf = (a: Asset | undefined): string => (a ? String(a.metadata.name) : 'Missing asset');
const placed = placeClips(CLIPS, ASSETS);
const find = (id: string): PlacedClip => {
  const one = placed.find((p) => p.clip.id === id);
  assert.ok(one, id);
  return one;
};

describe('the studio timeline model', () => {
  it('has the five lanes in order, with their group names', () => {
    assert.deepEqual(LANES, ['video', 'text', 'voice', 'sfx', 'music']);
    assert.deepEqual(
      LANES.map((t) => LANE_NAMES[t]),
      ['Video track', 'Text track', 'Voice track', 'Sound effects track', 'Music track'],
    );
  });

  it('names each clip by its place in its lane, its asset or text, and its duration with one decimal at most', () => {
    const video = laneClips(placed, 'video');
    assert.deepEqual(
      video.map((p, i) => clipLabel(p, i + 1, nameOf)),
      ['1: Red card, 3 s', '2: Harbour, 2.5 s'],
    );
    assert.equal(clipLabel(find('vc_t'), 1, nameOf), '1: Hello world, 2 s');
    assert.equal(laneClips(placed, 'music').length, 0);
  });

  it('turns seconds into pixels and back at each zoom level', () => {
    assert.equal(secToPx(2.5, pxPerSecAt(3)), 200);
    assert.equal(pxToSec(200, pxPerSecAt(3)), 2.5);
    assert.ok(pxPerSecAt(99) > pxPerSecAt(0), 'zoom is clamped to its levels');
  });

  it('snaps a time to clip edges and the playhead within a few pixels, and not farther', () => {
    const targets = snapTargets(placed, 'vc_v', 4.2);
    assert.ok(!targets.includes(6), "the dragged clip's own end is no target");
    assert.equal(snapTime(3.05, targets, 80), 3, 'the first clip ends at 3');
    assert.equal(snapTime(4.15, targets, 80), 4.2, 'the playhead');
    assert.equal(snapTime(3.5, targets, 80), 3.5, 'nothing near');
  });

  it('reorders a dragged video clip by the clips its middle passed', () => {
    const video = laneClips(placed, 'video');
    assert.equal(reorderIdx(video, 'vc_a', 5), 1);
    assert.equal(reorderIdx(video, 'vc_b', 0.5), 0);
  });

  it('moves with the keyboard: one place in the video lane, half a second elsewhere', () => {
    assert.deepEqual(moveStepPatch(find('vc_a'), 1, 2), { idx: 1 });
    assert.equal(moveStepPatch(find('vc_a'), -1, 2), null, 'already first');
    assert.deepEqual(moveStepPatch(find('vc_t'), -1, 1), { start_sec: 0.5 });
    assert.deepEqual(moveStepPatch(find('vc_v'), 1, 1), { start_sec: 2.5 });
  });

  it('trims the end edge as a new duration, within what the asset holds', () => {
    assert.deepEqual(trimEndStepPatch(find('vc_a'), -1), { duration_sec: 2.5 });
    assert.deepEqual(trimEndPatch(find('vc_b'), 3 + 20), { duration_sec: 9 }, '10 s asset, 1 s trimmed');
    assert.deepEqual(trimEndPatch(find('vc_a'), 0.1), { duration_sec: 0.5 }, 'never shorter than 0.5 s');
  });

  it('trims the start edge: trim and duration for media, start and duration for text', () => {
    assert.deepEqual(trimStartPatch(find('vc_b'), 3.5), { duration_sec: 2, trim_start_sec: 1.5 });
    assert.deepEqual(
      trimStartPatch(find('vc_b'), 0),
      { duration_sec: 3.5, trim_start_sec: 0 },
      'not before 0',
    );
    assert.deepEqual(trimStartPatch(find('vc_t'), 1.5), { duration_sec: 1.5, start_sec: 1.5 });
    assert.deepEqual(trimStartPatch(find('vc_v'), 3), { duration_sec: 3, trim_start_sec: 1, start_sec: 3 });
    assert.deepEqual(trimStartPatch(find('vc_a'), 1), { duration_sec: 2 }, 'an image only gets shorter');
  });

  it('splits at the playhead: the clip shortened, the rest added after it', () => {
    const plan = splitPlan(find('vc_b'), 4);
    assert.ok(plan);
    assert.deepEqual(plan.shorten, { duration_sec: 1 });
    assert.deepEqual(plan.restore, { duration_sec: 2.5 });
    assert.equal(plan.add.track, 'video');
    assert.equal(plan.add.idx, 2);
    assert.equal(plan.add.asset_id, 'va_film');
    assert.equal(plan.add.duration_sec, 1.5);
    assert.equal(plan.add.trim_start_sec, 2);
    const text = splitPlan(find('vc_t'), 2);
    assert.equal(text?.add.start_sec, 2);
    assert.equal(text?.add.text, 'Hello\nworld');
    assert.equal(splitPlan(find('vc_b'), 3.2), null, 'too near the edge');
  });

  it("copies a clip's fields to add it again, and the patch back to its old values", () => {
    const body = clipAddBody(find('vc_v').clip);
    assert.deepEqual(body, {
      video_id: 'vv_1',
      track: 'voice',
      idx: 0,
      asset_id: 'va_voice',
      start_sec: 2,
      trim_start_sec: 0,
      duration_sec: 4,
    });
    assert.deepEqual(inversePatch(find('vc_v'), { start_sec: 3, duration_sec: 1 }), {
      start_sec: 2,
      duration_sec: 4,
    });
    assert.deepEqual(inversePatch(find('vc_a'), { idx: 1 }), { idx: 0 });
  });

  it('maps keys to commands, clip commands only with a clip focused', () => {
    const key = (
      k: string,
      mods: Partial<Record<'altKey' | 'shiftKey' | 'ctrlKey' | 'metaKey', boolean>> = {},
    ) => ({
      key: k,
      altKey: false,
      shiftKey: false,
      ctrlKey: false,
      metaKey: false,
      ...mods,
    });
    assert.deepEqual(keyCommand(key('ArrowLeft', { altKey: true }), true), { kind: 'move', direction: -1 });
    assert.deepEqual(keyCommand(key('ArrowRight', { shiftKey: true }), true), {
      kind: 'trim-end',
      direction: 1,
    });
    assert.deepEqual(keyCommand(key('s'), true), { kind: 'split' });
    assert.equal(keyCommand(key('s'), false), null);
    assert.deepEqual(keyCommand(key('Delete'), true), { kind: 'delete' });
    assert.deepEqual(keyCommand(key('ArrowRight'), false), { kind: 'step', frames: 1 });
    assert.deepEqual(keyCommand(key(' '), false), { kind: 'play-pause' });
    assert.deepEqual(keyCommand(key('z', { ctrlKey: true }), false), { kind: 'undo' });
    assert.deepEqual(keyCommand(key('Z', { ctrlKey: true, shiftKey: true }), false), { kind: 'redo' });
    assert.equal(stepPlayhead(0, -1, 10), 0);
    assert.equal(stepPlayhead(1, 1, 10), Math.round((1 + FRAME_SEC) * 1000) / 1000);
  });
});

describe('the studio timeline gestures', () => {
  it('drags a video clip to a new place, undone by the place it had', () => {
    const entry = dragEntry(placed, find('vc_a'), 'move', 4 * 80, 80, 0);
    assert.deepEqual(entry && callsOf(entry.forward), [
      { method: 'PATCH', clipRef: 'vc_a', body: { idx: 1 } },
    ]);
    assert.deepEqual(entry && callsOf(entry.inverse), [
      { method: 'PATCH', clipRef: 'vc_a', body: { idx: 0 } },
    ]);
    assert.equal(dragEntry(placed, find('vc_a'), 'move', 10, 80, 0), null, 'not past the next clip: no edit');
  });

  it('drags an audio clip in time, its start or its end snapping to an edge or the playhead', () => {
    // The voice clip (2 s to 6 s) dragged 0.95 s on: its start lands near 2.95, pulled to the image's end (3).
    const forward = callsOf(dragEntry(placed, find('vc_v'), 'move', 0.95 * 80, 80, 10)?.forward ?? []);
    assert.deepEqual(forward, [{ method: 'PATCH', clipRef: 'vc_v', body: { start_sec: 3 } }]);
    // Dragged back 1.45 s: its end (4.55) is pulled to the playhead at 4.5.
    const back = callsOf(dragEntry(placed, find('vc_v'), 'move', -1.45 * 80, 80, 4.5)?.forward ?? []);
    assert.deepEqual(back, [{ method: 'PATCH', clipRef: 'vc_v', body: { start_sec: 0.5 } }]);
  });

  it('drags an end edge to trim, with snapping', () => {
    // The text clip (1 s to 3 s): its end dragged to 5.45 s is pulled to the film clip's end at 5.5 s.
    const entry = dragEntry(placed, find('vc_t'), 'trim-end', 2.45 * 80, 80, 0);
    assert.deepEqual(entry?.forward[0]?.call, {
      method: 'PATCH',
      clipRef: 'vc_t',
      body: { duration_sec: 4.5 },
    });
    assert.deepEqual(entry?.inverse[0]?.call, {
      method: 'PATCH',
      clipRef: 'vc_t',
      body: { duration_sec: 2 },
    });
  });

  it('adds a dropped asset where it was dropped', () => {
    const video = dropEntry(placed, 'video', 'va_film', 'vv_1', 1).forward[0]?.call;
    assert.equal(video?.method, 'POST');
    assert.deepEqual(video?.method === 'POST' && video.body, {
      track: 'video',
      asset_id: 'va_film',
      video_id: 'vv_1',
      idx: 0,
    });
    const music = dropEntry(placed, 'music', 'va_voice', 'vv_1', 2.34).forward[0]?.call;
    assert.deepEqual(music?.method === 'POST' && music.body.start_sec, 2.3);
  });

  it('splits the selected clip, or else the video clip under the playhead', () => {
    assert.equal(splitTarget(placed, undefined, 4)?.clip.id, 'vc_b');
    assert.equal(splitTarget(placed, find('vc_t'), 4)?.clip.id, 'vc_t');
    assert.equal(splitAtEntry(find('vc_b'), 4)?.forward.length, 2);
    assert.equal(moveStepEntry(placed, find('vc_b'), 1), null, 'the last clip cannot move on');
  });
});

describe('the studio edit history', () => {
  /** A fake API: records the calls and answers POSTs with fresh ids; `refuse` makes the next call a 409. */
  function fakeApi() {
    const calls: ResolvedCall[] = [];
    let made = 0;
    let refuse = false;
    const send = async (call: ResolvedCall): Promise<string | boolean> => {
      if (refuse) {
        refuse = false;
        return false;
      }
      calls.push(call);
      return call.method === 'POST' ? `vc_made${++made}` : true;
    };
    return { calls, send, refuseNext: () => (refuse = true) };
  }

  it('undoes a patch with the patch back, and redoes it', async () => {
    const api = fakeApi();
    const history = new EditHistory();
    assert.ok(await history.perform(patchEntry('move', 'vc_a', { idx: 1 }, { idx: 0 }), api.send));
    assert.ok(history.canUndo && !history.canRedo);
    assert.ok(await history.undo(api.send));
    assert.ok(await history.redo(api.send));
    assert.deepEqual(
      api.calls.map((c) => [c.method, c.path, c.body]),
      [
        ['PATCH', '/clips/vc_a', { idx: 1 }],
        ['PATCH', '/clips/vc_a', { idx: 0 }],
        ['PATCH', '/clips/vc_a', { idx: 1 }],
      ],
    );
  });

  it('undoes a delete by adding the clip again, and follows its new id afterwards', async () => {
    const api = fakeApi();
    const history = new EditHistory();
    await history.perform(patchEntry('trim', 'vc_a', { duration_sec: 2 }, { duration_sec: 3 }), api.send);
    await history.perform(deleteEntry('vc_a', { track: 'video', asset_id: 'va_red', idx: 0 }), api.send);
    await history.undo(api.send); // re-added as vc_made1
    await history.undo(api.send); // the trim's inverse goes to the re-added clip
    await history.redo(api.send);
    await history.redo(api.send);
    assert.deepEqual(
      api.calls.map((c) => `${c.method} ${c.path}`),
      [
        'PATCH /clips/vc_a',
        'DELETE /clips/vc_a',
        'POST /clips',
        'PATCH /clips/vc_made1',
        'PATCH /clips/vc_made1',
        'DELETE /clips/vc_made1',
      ],
    );
  });

  it('forgets the new id of a re-added clip once no edit it keeps names the clip', async () => {
    const api = fakeApi();
    const history = new EditHistory();
    await history.perform(deleteEntry('vc_a', { track: 'video', asset_id: 'va_red', idx: 0 }), api.send);
    await history.undo(api.send); // re-added as vc_made1
    assert.equal(history.idOf('vc_a'), 'vc_made1');
    // A new edit clears the redo of the delete: nothing names vc_a any more.
    await history.perform(patchEntry('move', 'vc_made1', { idx: 1 }, { idx: 0 }), api.send);
    assert.equal(history.idOf('vc_a'), 'vc_a');
  });

  it('undoes a split by deleting the rest and giving the clip its length back', async () => {
    const api = fakeApi();
    const history = new EditHistory();
    const plan = {
      shorten: { duration_sec: 1 },
      restore: { duration_sec: 2.5 },
      add: { track: 'video' as const, asset_id: 'va_film', idx: 2, duration_sec: 1.5 },
    };
    await history.perform(splitEntry('vc_b', plan), api.send);
    await history.undo(api.send);
    await history.redo(api.send);
    assert.deepEqual(
      api.calls.map((c) => `${c.method} ${c.path}`),
      [
        'PATCH /clips/vc_b',
        'POST /clips',
        'DELETE /clips/vc_made1',
        'PATCH /clips/vc_b',
        'PATCH /clips/vc_b',
        'POST /clips',
      ],
    );
  });

  it('keeps an edit to undo when the project changed under it (409), and a new edit clears redo', async () => {
    const api = fakeApi();
    const history = new EditHistory();
    await history.perform(addEntry({ track: 'music', asset_id: 'va_voice' }), api.send);
    api.refuseNext();
    assert.equal(await history.undo(api.send), false);
    assert.ok(history.canUndo, 'still there to try again');
    assert.ok(await history.undo(api.send));
    assert.equal(api.calls.at(-1)?.path, '/clips/vc_made1');
    assert.ok(history.canRedo);
    await history.perform(patchEntry('move', 'vc_a', { idx: 1 }, { idx: 0 }), api.send);
    assert.equal(history.canRedo, false);
    api.refuseNext();
    assert.equal(await history.perform(patchEntry('move', 'vc_a', { idx: 0 }, { idx: 1 }), api.send), false);
    assert.equal(history.undoLabel, 'move');
  });
});
