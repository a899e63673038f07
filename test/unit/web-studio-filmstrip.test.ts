// The filmstrip of a clip box (web/src/studio/filmstrip-range.ts): the box shows the part of the video the
// clip plays — from its trim, for its length × its speed — read back from the CSS background size and position
// as CSS lays them out: the sprite `size` × the box wide, a position p putting p of the sprite on p of the box.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Clip } from '../../web/src/api-types.ts';
import { assetView, clipView } from '../helpers/studio-views.ts';
import { placeClips } from '../../web/src/studio/placements.ts';
import { filmstripRange } from '../../web/src/studio/filmstrip-range.ts';

const film = assetView('va_film', 'video', { duration_sec: 10, filmstrip_url: '/media/strip.jpg' });
const unknownLength = assetView('va_odd', 'video', { filmstrip_url: '/media/odd.jpg' });

/** The one video clip placed, with `fields`. */
function placedClip(fields: Partial<Clip>, asset = film) {
  const clip = clipView({ id: 'vc_1', idx: 0, track: 'video', asset_id: asset.id, ...fields });
  return placeClips([clip], [asset])[0]!;
}

/** The video seconds at the box's left and right edges, as a browser lays the background out. */
function shownSeconds(range: { size: string; position: string }, durationSec: number) {
  const box = 1;
  const sprite = (Number.parseFloat(range.size) / 100) * box;
  const offset = (Number.parseFloat(range.position) / 100) * (box - sprite);
  const at = (x: number) => ((x - offset) / sprite) * durationSec;
  return { left: at(0), right: at(box) };
}

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-3, `${what}: ${actual} is not ${expected}`);

describe('the filmstrip over a clip box', () => {
  it('shows the whole strip for a clip that plays the whole video', () => {
    assert.deepEqual(filmstripRange(placedClip({ trim_start_sec: 0 })), {
      size: '100% 100%',
      position: '0% 0%',
    });
  });

  it('shows only the trimmed range: 2 s to 5 s of a 10 s video', () => {
    const range = filmstripRange(placedClip({ trim_start_sec: 2, duration_sec: 3 }));
    assert.equal(range.size, '333.3333% 100%');
    const shown = shownSeconds(range, 10);
    close(shown.left, 2, 'left edge');
    close(shown.right, 5, 'right edge');
  });

  it('a trim at the start alone: the rest of the video', () => {
    const shown = shownSeconds(filmstripRange(placedClip({ trim_start_sec: 4 })), 10);
    close(shown.left, 4, 'left edge');
    close(shown.right, 10, 'right edge');
  });

  it('a sped-up clip covers its length × its speed of the video', () => {
    const shown = shownSeconds(
      filmstripRange(placedClip({ trim_start_sec: 1, duration_sec: 2, speed: 2 })),
      10,
    );
    close(shown.left, 1, 'left edge');
    close(shown.right, 5, 'right edge');
    // Slowed down: half a second of video a second.
    const slow = shownSeconds(
      filmstripRange(placedClip({ trim_start_sec: 6, duration_sec: 4, speed: 0.5 })),
      10,
    );
    close(slow.left, 6, 'left edge');
    close(slow.right, 8, 'right edge');
  });

  it('the first of several trimmed clips of one video shows its own range, the second its own', () => {
    const clips = [
      clipView({ id: 'vc_a', idx: 0, track: 'video', asset_id: film.id, trim_start_sec: 0, duration_sec: 2 }),
      clipView({ id: 'vc_b', idx: 1, track: 'video', asset_id: film.id, trim_start_sec: 7, duration_sec: 3 }),
    ];
    const [first, second] = placeClips(clips, [film]);
    const a = shownSeconds(filmstripRange(first!), 10);
    const b = shownSeconds(filmstripRange(second!), 10);
    close(a.left, 0, 'first clip, left');
    close(a.right, 2, 'first clip, right');
    close(b.left, 7, 'second clip, left');
    close(b.right, 10, 'second clip, right');
  });

  it('a video of unknown length keeps the whole strip', () => {
    assert.deepEqual(filmstripRange(placedClip({ trim_start_sec: 3, duration_sec: 2 }, unknownLength)), {
      size: '100% 100%',
      position: '0% 0%',
    });
  });
});
