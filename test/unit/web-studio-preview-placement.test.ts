// The preview's placement of a picture (web/src/studio/preview-placement.ts) against the export's own
// (workers/export/placement.ts): the export's `scale` sizes are ffmpeg expressions, evaluated here for each
// shape of picture, and the preview must land on the same size and centre, for `fit` and for `fill`.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { placementFilters } from '../../workers/export/placement.ts';
import { placedRect } from '../../web/src/studio/preview-placement.ts';

/** ffmpeg's eval functions the placement uses (its `round` takes halves away from zero). */
const ffmpeg = {
  if: (condition: number, yes: number, no: number) => (condition ? yes : no),
  gte: (a: number, b: number) => (a >= b ? 1 : 0),
  max: Math.max,
  round: (value: number) => Math.sign(value) * Math.round(Math.abs(value)),
};

/** Evaluates one ffmpeg expression of `dar` (only the functions above, numbers and arithmetic). */
function evaluate(expression: string, dar: number): number {
  const js = expression.replace(/\bif\(/g, 'iff(');
  assert.match(js, /^[\d\s+\-*/().,a-z]*$/, `an expression this test can read: ${expression}`);
  const run = new Function('dar', 'iff', 'gte', 'max', 'round', `return (${js});`) as (
    ...args: unknown[]
  ) => number;
  return run(dar, ffmpeg.if, ffmpeg.gte, ffmpeg.max, ffmpeg.round);
}

/** The size the export scales a picture of aspect `dar` to, and where its crop or pad puts it. */
function exportRect(fit: 'fit' | 'fill', width: number, height: number, dar: number) {
  const filters = placementFilters(fit, width, height, 'preview');
  const scale = /scale=w='([^']+)':h='([^']+)'/.exec(filters);
  assert.ok(scale, filters);
  const w = evaluate(scale[1]!, dar);
  const h = evaluate(scale[2]!, dar);
  // pad puts the picture at ((ow-iw)/2, (oh-ih)/2); crop takes from ((iw-ow)/2, (ih-oh)/2): the same place.
  return { x: (width - w) / 2, y: (height - h) / 2, width: w, height: h };
}

const FRAMES = [
  { width: 640, height: 360 },
  { width: 360, height: 640 },
  { width: 360, height: 360 },
  { width: 1280, height: 720 },
];
/** Pictures of many shapes: square, 4:3, 16:9, within 2 px of the frame's, a strip, portrait. */
const SOURCES = [
  [500, 500],
  [640, 480],
  [1920, 1080],
  [854, 480],
  [641, 360],
  [1, 10_000],
  [10_000, 1],
  [1080, 1920],
  [333, 777],
];

describe('the preview places pictures as the export does', () => {
  for (const fit of ['fit', 'fill'] as const)
    it(`${fit}: the same size and centre for every shape of picture and frame`, () => {
      for (const frame of FRAMES)
        for (const [sw, sh] of SOURCES) {
          const expected = exportRect(fit, frame.width, frame.height, sw! / sh!);
          const actual = placedRect(fit, frame.width, frame.height, sw!, sh!);
          assert.deepEqual(actual, expected, `${fit} ${sw}×${sh} in ${frame.width}×${frame.height}`);
        }
    });

  it('fill covers the frame and crops the sides that stick out; fit stays inside it', () => {
    // A 4:3 picture in a 16:9 frame: fill is the frame's width, 480 high, 60 px cropped above and below.
    assert.deepEqual(placedRect('fill', 640, 360, 640, 480), { x: 0, y: -60, width: 640, height: 480 });
    assert.deepEqual(placedRect('fit', 640, 360, 640, 480), { x: 80, y: 0, width: 480, height: 360 });
    // A portrait 9:16 picture in a 16:9 frame: fill is 640 wide, cropped to its middle.
    const portrait = placedRect('fill', 640, 360, 1080, 1920);
    assert.equal(portrait.width, 640);
    assert.ok(portrait.height >= 1136 && portrait.height <= 1140, String(portrait.height));
    assert.equal(portrait.y, (360 - portrait.height) / 2);
  });

  it('a picture of no size is not placed', () => {
    assert.deepEqual(placedRect('fill', 640, 360, 0, 0), { x: 0, y: 0, width: 0, height: 0 });
  });
});
