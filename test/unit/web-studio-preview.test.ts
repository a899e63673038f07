// The preview player's pure parts (web/src/studio/preview-*.ts): which clips a frame shows and from which
// source second, on the export's 30 fps grid; motion windows; transitions as xfade draws them; text opacity
// and layout; the sound schedule's places, rates and gains (fades, equal-power cross-fades, de-click ramps).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Clip } from '../../web/src/api-types.ts';
import { assetView, clipView } from '../helpers/studio-views.ts';
import { placeClips } from '../../web/src/studio/placements.ts';
import {
  frameView,
  motionWindow,
  previewSize,
  textAlpha,
  videoLengthSec,
} from '../../web/src/studio/preview-frame.ts';
import { envelopeGain, soundSchedule } from '../../web/src/studio/preview-sound.ts';
import { layoutPreviewText } from '../../web/src/studio/preview-text.ts';
import { transitionLook } from '../../web/src/studio/preview-transitions.ts';

const asset = assetView;

let next = 0;
/** A clip with its own id, at idx 0, played from its start at full volume unless `fields` say otherwise. */
function clip(fields: Partial<Clip> & Pick<Clip, 'track'>): Clip {
  next += 1;
  return clipView({ id: `vc_${next}`, idx: 0, trim_start_sec: 0, volume: 1, ...fields });
}

const red = asset('va_red', 'image');
const blue = asset('va_blue', 'image');
const film = asset('va_film', 'video', { duration_sec: 10 });
const voice = asset('va_voice', 'audio', { duration_sec: 3 });
const assets = [red, blue, film, voice];

const close = (actual: number, expected: number, what: string, within = 1e-9) =>
  assert.ok(Math.abs(actual - expected) <= within, `${what}: ${actual} is not ${expected}`);

describe('the preview frame', () => {
  it('cuts from one clip to the next on the frame the export cuts at', () => {
    const placed = placeClips(
      [
        clip({ track: 'video', idx: 0, asset_id: red.id, duration_sec: 2 }),
        clip({ track: 'video', idx: 1, asset_id: blue.id, duration_sec: 2 }),
      ],
      assets,
    );
    assert.equal(videoLengthSec(placed), 4);
    assert.equal(frameView(placed, 1.99).base?.placed.asset?.id, red.id);
    assert.equal(frameView(placed, 2).base?.placed.asset?.id, blue.id);
    assert.equal(frameView(placed, 2.01).base?.placed.asset?.id, blue.id);
    assert.equal(frameView(placed, 4).base, null, 'nothing past the end');
    assert.equal(frameView(placed, 2.01).transition, null);
  });

  it('puts a clip whose length falls between frames on the grid (a 1.01 s clip ends at frame 30)', () => {
    const placed = placeClips(
      [
        clip({ track: 'video', idx: 0, asset_id: red.id, duration_sec: 1.01 }),
        clip({ track: 'video', idx: 1, asset_id: blue.id, duration_sec: 1 }),
      ],
      assets,
    );
    assert.equal(frameView(placed, 29 / 30).base?.placed.asset?.id, red.id);
    assert.equal(frameView(placed, 30 / 30 + 0.001).base?.placed.asset?.id, blue.id);
  });

  it('shows a video clip from trim + time in the clip × speed', () => {
    const placed = placeClips(
      [
        clip({ track: 'video', idx: 0, asset_id: red.id, duration_sec: 1 }),
        clip({ track: 'video', idx: 1, asset_id: film.id, trim_start_sec: 2, duration_sec: 2, speed: 2 }),
      ],
      assets,
    );
    const layer = frameView(placed, 1.5).base!;
    assert.equal(layer.placed.asset?.id, film.id);
    close(layer.sourceSec, 2 + 0.5 * 2, 'source second');
  });

  it('overlaps two clips over a transition, with how far it has gone', () => {
    const placed = placeClips(
      [
        clip({ track: 'video', idx: 0, asset_id: red.id, duration_sec: 2 }),
        clip({
          track: 'video',
          idx: 1,
          asset_id: blue.id,
          duration_sec: 2,
          transition_in: { type: 'wipeleft', duration_sec: 1 },
        }),
      ],
      assets,
    );
    assert.equal(videoLengthSec(placed), 3, 'Σ durations − Σ transitions');
    const before = frameView(placed, 0.99);
    assert.equal(before.transition, null);
    const middle = frameView(placed, 1.5);
    assert.equal(middle.base?.placed.asset?.id, red.id);
    assert.equal(middle.transition?.incoming.placed.asset?.id, blue.id);
    assert.equal(middle.transition?.type, 'wipeleft');
    close(middle.transition!.done, 0.5, 'done');
    const after = frameView(placed, 2.01);
    assert.equal(after.transition, null);
    assert.equal(after.base?.placed.asset?.id, blue.id);
  });

  it('fades the first clip in from black over its transition without shortening the video', () => {
    const placed = placeClips(
      [
        clip({
          track: 'video',
          idx: 0,
          asset_id: red.id,
          duration_sec: 2,
          transition_in: { type: 'fade', duration_sec: 1 },
        }),
      ],
      assets,
    );
    assert.equal(videoLengthSec(placed), 2);
    assert.equal(frameView(placed, 0).black, 1);
    close(frameView(placed, 0.5).black, 0.5, 'black half way');
    assert.equal(frameView(placed, 1.2).black, 0);
  });

  it('moves an image by its motion from its first frame to its last', () => {
    assert.deepEqual(motionWindow('none', 0.5), { x: 0, y: 0, width: 1, height: 1 });
    const zoomStart = motionWindow('zoom_in', 0);
    const zoomEnd = motionWindow('zoom_in', 1);
    close(zoomStart.width, 1, 'zoom_in starts whole');
    close(zoomEnd.width, 1 / 1.15, 'zoom_in ends at 1.15×');
    close(zoomEnd.x, (1 - 1 / 1.15) / 2, 'centred');
    close(motionWindow('zoom_out', 0).width, 1 / 1.15, 'zoom_out starts close');
    const panStart = motionWindow('pan_left', 0);
    const panEnd = motionWindow('pan_left', 1);
    close(panEnd.x - panStart.x, 0.1 / 1.15, 'pan_left moves the window right by 10 % of the shown width');
    close(motionWindow('pan_right', 1).x - motionWindow('pan_right', 0).x, -0.1 / 1.15, 'pan_right');
    const placed = placeClips(
      [clip({ track: 'video', idx: 0, asset_id: red.id, duration_sec: 2, motion: 'zoom_in' })],
      assets,
    );
    close(frameView(placed, 59 / 30).base!.window.width, 1 / 1.15, 'the last frame is fully zoomed');
  });

  it('shows a text clip in its time only, fading in and out (fades cut to half the clip)', () => {
    const placed = placeClips(
      [
        clip({ track: 'video', idx: 0, asset_id: red.id, duration_sec: 5 }),
        clip({
          track: 'text',
          text: 'Hello',
          start_sec: 1,
          duration_sec: 2,
          volume: null,
          trim_start_sec: null,
        }),
      ],
      assets,
    );
    const text = placed.find((one) => one.clip.track === 'text')!;
    assert.equal(frameView(placed, 0.5).texts.length, 0);
    assert.equal(frameView(placed, 2).texts.length, 1);
    assert.equal(frameView(placed, 2).texts[0]!.alpha, 1);
    close(textAlpha(text, 1.15), 0.5, 'half way into the default 0.3 s fade');
    assert.equal(frameView(placed, 3.1).texts.length, 0);
    const short = placeClips(
      [clip({ track: 'text', text: 'x', start_sec: 0, duration_sec: 0.5, fade_in_sec: 2, fade_out_sec: 2 })],
      assets,
    )[0]!;
    close(textAlpha(short, 0.125), 0.5, 'a fade is at most half of the clip');
  });

  it('sizes the canvas like the export preview', () => {
    assert.deepEqual(previewSize('16:9'), { width: 640, height: 360 });
    assert.deepEqual(previewSize('9:16'), { width: 360, height: 640 });
    assert.deepEqual(previewSize('4:5'), { width: 360, height: 450 });
    assert.deepEqual(previewSize('4:3'), { width: 480, height: 360 });
  });
});

describe('the preview transitions', () => {
  it('cross-dissolves a fade: the middle frame is half of each clip', () => {
    assert.deepEqual(transitionLook('fade', 0.5, 640, 360), {
      kind: 'blend',
      outgoing: 0.5,
      incoming: 0.5,
      colour: '#000000',
      colourWeight: 0,
    });
  });

  it('goes through black or white, all colour in the middle', () => {
    const middle = transitionLook('fadewhite', 0.5, 640, 360);
    assert.equal(middle.kind, 'blend');
    if (middle.kind !== 'blend') return;
    assert.equal(middle.colour, '#ffffff');
    assert.equal(middle.outgoing, 0);
    assert.ok(middle.colourWeight > 0.6, `mostly white: ${middle.colourWeight}`);
    const start = transitionLook('fadeblack', 0, 640, 360);
    assert.ok(start.kind === 'blend' && start.outgoing === 1 && start.incoming === 0);
    const end = transitionLook('fadeblack', 1, 640, 360);
    assert.ok(end.kind === 'blend' && end.outgoing === 0 && end.incoming === 1);
  });

  it('wipes, slides and opens a circle in the directions xfade does', () => {
    assert.deepEqual(transitionLook('wipeleft', 0.25, 640, 360), {
      kind: 'wipe',
      incoming: { x: 480, y: 0, width: 160, height: 360 },
    });
    assert.deepEqual(transitionLook('wiperight', 0.25, 640, 360), {
      kind: 'wipe',
      incoming: { x: 0, y: 0, width: 160, height: 360 },
    });
    assert.deepEqual(transitionLook('slideleft', 0.25, 640, 360), {
      kind: 'slide',
      outgoingX: -160,
      incomingX: 480,
    });
    assert.deepEqual(transitionLook('slideright', 0.25, 640, 360), {
      kind: 'slide',
      outgoingX: 160,
      incomingX: -480,
    });
    const small = transitionLook('circleopen', 0.1, 640, 360);
    const large = transitionLook('circleopen', 0.9, 640, 360);
    assert.ok(small.kind === 'circle' && large.kind === 'circle');
    assert.equal(small.outerRadius, 0, 'nothing of the next clip at first');
    assert.ok(large.innerRadius > Math.hypot(320, 180), 'the circle covers the frame near the end');
    const middle = transitionLook('circleopen', 0.5, 640, 360);
    assert.ok(middle.kind === 'circle' && middle.innerRadius === 0 && middle.outerRadius > 0);
  });
});

describe('the preview text layout', () => {
  /** A monospaced measure: every character half an em wide. */
  const measure = (text: string, sizePx: number) => Array.from(text).length * sizePx * 0.5;

  it('wraps words to 90 % of the width and keeps the user line breaks', () => {
    const layout = layoutPreviewText(
      {
        text: 'one two three four five six seven eight nine ten eleven\nlast',
        style: 'title',
        position: 'center',
        background: 'none',
      },
      { width: 640, height: 360 },
      measure,
    );
    assert.equal(layout.fontSizePx, Math.round(0.09 * 360));
    for (const line of layout.lines) assert.ok(measure(line, layout.fontSizePx) <= 0.9 * 640, line);
    assert.ok(layout.lines.length > 2, layout.lines.join('|'));
    assert.equal(layout.lines.at(-1), 'last');
    assert.equal(layout.align, 'center');
  });

  it('places a lower third at the bottom on the left with a box', () => {
    const layout = layoutPreviewText(
      { text: 'Ada', style: 'lower_third', position: 'bottom', background: 'box' },
      { width: 640, height: 360 },
      measure,
    );
    assert.equal(layout.align, 'left');
    assert.ok(layout.boxPaddingPx > 0);
    assert.ok(layout.baselines[0]! > 360 * 0.75, `low: ${layout.baselines[0]}`);
    assert.equal(layout.leftPx, Math.round(0.05 * 640 + layout.boxPaddingPx));
  });
});

describe('the preview sound schedule', () => {
  it('plays each clip with sound at its place, trim and speed, and leaves images silent', () => {
    const placed = placeClips(
      [
        clip({ track: 'video', idx: 0, asset_id: red.id, duration_sec: 1 }),
        clip({ track: 'video', idx: 1, asset_id: film.id, trim_start_sec: 1, duration_sec: 2, speed: 2 }),
        clip({ track: 'voice', idx: 0, asset_id: voice.id, start_sec: 0.5, volume: 0.5 }),
      ],
      assets,
    );
    const entries = soundSchedule(placed);
    assert.equal(entries.length, 2);
    const own = entries.find((e) => e.assetId === film.id)!;
    assert.deepEqual([own.startSec, own.endSec, own.sourceStartSec, own.rate], [1, 3, 1, 2]);
    const spoken = entries.find((e) => e.assetId === voice.id)!;
    assert.equal(spoken.startSec, 0.5);
    assert.equal(spoken.endSec, 3, 'cut at the end of the video');
    close(envelopeGain(spoken, 1.5), 0.5, 'its volume');
  });

  it('fades linearly, and ramps 10 ms where a sound starts or stops at a cut', () => {
    const placed = placeClips(
      [
        clip({ track: 'video', idx: 0, asset_id: film.id, duration_sec: 4, fade_in_sec: 1 }),
        clip({ track: 'music', idx: 0, asset_id: voice.id, start_sec: 0 }),
      ],
      assets,
    );
    const [own, music] = soundSchedule(placed);
    close(envelopeGain(own!, 0.5), 0.5, 'half way into the fade in');
    close(envelopeGain(own!, 3.995), 0.5, 'the de-click ramp at the end', 1e-6);
    close(envelopeGain(music!, 0.005), 0.5, 'the de-click ramp at the start', 1e-6);
    close(envelopeGain(music!, 1), 1, 'full in the middle');
  });

  it('cross-fades a transition with equal power: the two gains square-sum to one', () => {
    const film2 = asset('va_film2', 'video', { duration_sec: 10 });
    const placed = placeClips(
      [
        clip({ track: 'video', idx: 0, asset_id: film.id, duration_sec: 3 }),
        clip({
          track: 'video',
          idx: 1,
          asset_id: film2.id,
          duration_sec: 3,
          transition_in: { type: 'fade', duration_sec: 1 },
        }),
      ],
      [...assets, film2],
    );
    const [first, second] = soundSchedule(placed);
    assert.equal(first!.endSec, 3);
    assert.equal(second!.startSec, 2);
    for (const sec of [2.25, 2.5, 2.75]) {
      const power = envelopeGain(first!, sec) ** 2 + envelopeGain(second!, sec) ** 2;
      close(power, 1, `power at ${sec}`, 0.03);
    }
  });

  it('ducks the music about 12 dB while a voice clip plays, and brings it back after', () => {
    const song = asset('va_song', 'audio', { duration_sec: 10 });
    const placed = placeClips(
      [
        clip({ track: 'video', idx: 0, asset_id: red.id, duration_sec: 8 }),
        clip({ track: 'music', idx: 0, asset_id: song.id, start_sec: 0 }),
        clip({ track: 'voice', idx: 0, asset_id: voice.id, start_sec: 2 }),
      ],
      [...assets, song],
    );
    const music = soundSchedule(placed).find((entry) => entry.track === 'music')!;
    close(envelopeGain(music, 1), 1, 'before the voice');
    close(envelopeGain(music, 3), 10 ** (-12 / 20), 'under the voice', 1e-6);
    close(envelopeGain(music, 5.5), 1, 'after the release');
  });
});
