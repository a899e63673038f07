// The studio's undo history against a fake REST client that keeps the clips as the API would
// (web/src/studio/edit-history.ts, timeline-gestures.ts; docs/dashboard.md "Undo"): an entry of several calls
// is made entirely or taken back, and an undo gives a clip back the null fields it had.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AddClipRequest, Clip, PatchClipRequest } from '../../web/src/api-types.ts';
import { assetView, clipView } from '../helpers/studio-views.ts';
import { placeClips, type PlacedClip } from '../../web/src/studio/placements.ts';
import { clipPatchEntry, dragEntry, splitAtEntry } from '../../web/src/studio/timeline-gestures.ts';
import {
  EditHistory,
  EditRolledBack,
  patchEntry,
  type ResolvedCall,
} from '../../web/src/studio/edit-history.ts';

const ASSETS = [
  assetView('va_film', 'video', { name: 'Harbour', duration_sec: 10 }),
  assetView('va_voice', 'audio', { name: 'Narration', duration_sec: 8 }),
];

/** A refusal as the API answers it (the page's sender throws the API's error). */
class Refused extends Error {}

/**
 * A project's clips behind a fake REST client: POST adds (absent fields read back null, as the API's defaults
 * for a video clip), PATCH merges, DELETE removes. `failWhen` makes the matching call a 400 (`throw`) or a
 * 409 (`conflict`: nothing changed, the sender answers false).
 */
function fakeProject(clips: Clip[]) {
  const byId = new Map(clips.map((c) => [c.id, c]));
  const calls: string[] = [];
  let made = 0;
  let failure: { when: (call: ResolvedCall) => boolean; how: 'throw' | 'conflict' } | null = null;
  const idOf = (path: string): string => decodeURIComponent(path.slice('/clips/'.length));
  const send = async (call: ResolvedCall): Promise<string | boolean> => {
    calls.push(`${call.method} ${call.path}`);
    if (failure?.when(call)) {
      const how = failure.how;
      failure = null;
      if (how === 'conflict') return false;
      throw new Refused('transition_in is longer than half of a clip it joins');
    }
    if (call.method === 'POST') {
      const body = call.body as AddClipRequest;
      const id = `vc_made${++made}`;
      byId.set(id, clipView({ ...body, id, idx: body.idx ?? byId.size } as Clip));
      return id;
    }
    const id = idOf(call.path);
    const clip = byId.get(id);
    if (!clip) throw new Refused(`clip ${id} not found`);
    if (call.method === 'DELETE') byId.delete(id);
    else byId.set(id, { ...clip, ...(call.body as PatchClipRequest) });
    return true;
  };
  return {
    calls,
    send,
    clip: (id: string) => byId.get(id),
    clips: () => [...byId.values()],
    failWhen: (when: (call: ResolvedCall) => boolean, how: 'throw' | 'conflict' = 'throw') => {
      failure = { when, how };
    },
  };
}

const placedOf = (clips: Clip[], id: string): PlacedClip => {
  const one = placeClips(clips, ASSETS).find((p) => p.clip.id === id);
  assert.ok(one, id);
  return one;
};

describe('the studio history: an entry of several calls is made entirely or not at all', () => {
  const film = () =>
    clipView({ id: 'vc_f', track: 'video', idx: 0, asset_id: 'va_film', trim_start_sec: 0, duration_sec: 6 });

  it('takes back the first call of a split when the second is refused, and keeps nothing to undo', async () => {
    const api = fakeProject([film()]);
    const history = new EditHistory();
    const entry = splitAtEntry(placedOf(api.clips(), 'vc_f'), 2);
    assert.ok(entry);
    api.failWhen((call) => call.method === 'POST');
    await assert.rejects(history.perform(entry, api.send), (err: unknown) => {
      assert.ok(err instanceof EditRolledBack);
      assert.equal(err.restored, true);
      assert.match(err.message, /^The split stopped part-way \(transition_in is longer .*\); .*taken back/);
      return true;
    });
    assert.deepEqual(api.calls, ['PATCH /clips/vc_f', 'POST /clips', 'PATCH /clips/vc_f']);
    assert.equal(api.clip('vc_f')?.duration_sec, 6, 'the clip has its length back');
    assert.equal(api.clips().length, 1);
    assert.equal(history.canUndo, false, 'nothing half-made to undo');
  });

  it('takes back a half-made undo (a 409 between its calls), the split staying the one to undo', async () => {
    const api = fakeProject([film()]);
    const history = new EditHistory();
    const entry = splitAtEntry(placedOf(api.clips(), 'vc_f'), 2);
    assert.ok(entry && (await history.perform(entry, api.send)));
    // The undo deletes the rest, then the project changed before it could give the clip its length back.
    api.failWhen((call) => call.method === 'PATCH', 'conflict');
    await assert.rejects(history.undo(api.send), (err: unknown) => {
      assert.ok(err instanceof EditRolledBack);
      assert.match(err.message, /^Undoing the split stopped part-way \(the project changed\)/);
      return err.restored;
    });
    assert.deepEqual(api.calls.slice(2), ['DELETE /clips/vc_made1', 'PATCH /clips/vc_f', 'POST /clips']);
    const durations = api
      .clips()
      .map((c) => c.duration_sec)
      .sort();
    assert.deepEqual(durations, [2, 4], 'split again, as before the undo');
    assert.ok(history.canUndo && !history.canRedo);
    // The history follows the re-added rest: undoing again removes it.
    assert.ok(await history.undo(api.send));
    assert.equal(api.calls.at(-2), 'DELETE /clips/vc_made2');
    assert.deepEqual(
      api.clips().map((c) => c.duration_sec),
      [6],
    );
  });

  it('clears the history when the calls made cannot be taken back either', async () => {
    const api = fakeProject([film()]);
    const history = new EditHistory();
    assert.ok(await history.perform(patchEntry('move', 'vc_f', { idx: 0 }, { idx: 0 }), api.send));
    const entry = splitAtEntry(placedOf(api.clips(), 'vc_f'), 2);
    assert.ok(entry);
    let refusals = 0;
    const send = async (call: ResolvedCall) => {
      if (call.method === 'POST' || (call.method === 'PATCH' && refusals > 0)) {
        refusals++;
        throw new Refused('refused');
      }
      return api.send(call);
    };
    await assert.rejects(history.perform(entry, send), (err: unknown) => {
      assert.ok(err instanceof EditRolledBack);
      assert.equal(err.restored, false);
      assert.match(err.message, /could not be taken back entirely; the project was re-read/);
      return true;
    });
    assert.equal(history.canUndo, false, 'the history no longer matches the project: forgotten');
    assert.equal(history.canRedo, false);
  });

  it('changes nothing and says nothing new when the first call alone is refused', async () => {
    const api = fakeProject([film()]);
    const history = new EditHistory();
    const entry = splitAtEntry(placedOf(api.clips(), 'vc_f'), 2);
    assert.ok(entry);
    api.failWhen(() => true, 'conflict');
    assert.equal(await history.perform(entry, api.send), false);
    api.failWhen(() => true);
    await assert.rejects(history.perform(entry, api.send), Refused);
    assert.deepEqual(api.calls, ['PATCH /clips/vc_f', 'PATCH /clips/vc_f']);
  });
});

describe('the studio history: an undo gives back the null fields a clip had', () => {
  it('undoes a trim of a clip that played to its asset\'s end: "to the end" again, not 10 s', async () => {
    const toTheEnd = clipView({ id: 'vc_f', track: 'video', idx: 0, asset_id: 'va_film', trim_start_sec: 0 });
    const api = fakeProject([toTheEnd]);
    const history = new EditHistory();
    const one = placedOf(api.clips(), 'vc_f');
    assert.equal(one.endSec, 10);
    const entry = dragEntry(placeClips(api.clips(), ASSETS), one, 'trim-end', -4 * 80, 80, 0);
    assert.ok(entry);
    assert.ok(await history.perform(entry, api.send));
    assert.equal(api.clip('vc_f')?.duration_sec, 6);
    assert.ok(await history.undo(api.send));
    const back = api.clips();
    assert.equal(back.length, 1);
    assert.equal(back[0]?.duration_sec, null, 'to the end of the asset, as it was');
    assert.equal(back[0]?.idx, 0);
    assert.deepEqual(api.calls, ['PATCH /clips/vc_f', 'DELETE /clips/vc_f', 'POST /clips']);
    assert.deepEqual([...history.readdedIds], [['vc_f', 'vc_made1']], 'the selection can follow the clip');
    // Redo patches the clip as it came back (a new id), and undo again restores null once more.
    assert.ok(await history.redo(api.send));
    assert.equal(api.calls.at(-1), 'PATCH /clips/vc_made1');
    assert.equal(history.readdedIds.size, 0, 'a plain patch adds nothing again');
    assert.equal(api.clip('vc_made1')?.duration_sec, 6);
    assert.ok(await history.undo(api.send));
    assert.equal(api.clips()[0]?.duration_sec, null);
  });

  it('undoes a move of an audio clip placed after the one before it: no start_sec pinned', async () => {
    const voice = clipView({
      id: 'vc_v',
      track: 'voice',
      idx: 0,
      asset_id: 'va_voice',
      trim_start_sec: 0,
      volume: 1,
    });
    const api = fakeProject([voice]);
    const history = new EditHistory();
    const entry = clipPatchEntry('move', placedOf(api.clips(), 'vc_v'), { start_sec: 1.5 });
    assert.ok(await history.perform(entry, api.send));
    assert.ok(await history.undo(api.send));
    const back = api.clips()[0];
    assert.equal(back?.start_sec, null);
    assert.equal(back?.duration_sec, null);
    assert.equal(back?.volume, 1, 'its other fields as they were');
  });

  it('undoes a trim of a clip with a length of its own by the plain patch back', () => {
    const sized = clipView({
      id: 'vc_f',
      track: 'video',
      idx: 0,
      asset_id: 'va_film',
      trim_start_sec: 0,
      duration_sec: 6,
    });
    const entry = clipPatchEntry('trim', placedOf([sized], 'vc_f'), { duration_sec: 4 });
    assert.deepEqual(
      entry.inverse.map((step) => step.call),
      [{ method: 'PATCH', clipRef: 'vc_f', body: { duration_sec: 6 } }],
    );
  });
});
