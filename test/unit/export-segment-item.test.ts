import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mediaOf, parseItem, portablePlan, type SegmentItem } from '../../src/export/segment-item.ts';
import { notNowDelayMs } from '../../src/export/segment-encoder.ts';
import { planSegments } from '../../workers/export/segments.ts';
import type { ExportPlan, ExportSource } from '../../workers/export/work-order.ts';

// What a segment item carries between the nodes of a cluster (docs/operator.md, Segments across a cluster):
// the plan without local paths, keyed as on the requesting node, and only items of the right shape taken.

const image = (contentId: string | undefined, path: string): ExportSource => ({
  path,
  ...(contentId !== undefined && { contentId }),
  demuxer: 'png_pipe',
  kind: 'image',
  durationSec: null,
});

function plan(path: string, contentId: string | null = 'med_a.png "e1"'): ExportPlan {
  return {
    picture: [
      {
        source: image(contentId ?? undefined, `${path}/source-a`),
        trimStartSec: 0,
        durationSec: 1,
        volume: 1,
      },
      {
        source: image('med_b.png "e2"', `${path}/source-b`),
        trimStartSec: 0,
        durationSec: 1,
        volume: 1,
        transitionIn: { type: 'fade', durationSec: 0.5 },
      },
    ],
    sounds: [],
    output: { width: 320, height: 180, fps: 30, fit: 'fit', path: `${path}/output.mp4` },
    filters: { loudnorm: true, sidechaincompress: true },
    segmented: { dir: `${path}/segments`, reused: [], parallel: 2 },
  };
}

describe('segment items', () => {
  it('carry the plan without local paths, with the keys the requesting node computed', () => {
    const local = plan('/work/exports/ex_1');
    const portable = portablePlan(local)!;
    assert.ok(!JSON.stringify(portable).includes('/work/exports'), 'no local path travels');
    assert.equal(portable.segmented, undefined);
    assert.deepEqual(
      planSegments(portable).map((segment) => segment.key),
      planSegments(local).map((segment) => segment.key),
      'the same keys on every node',
    );
    // Another node's copies are elsewhere: the keys stay the same.
    const elsewhere = plan('/other/node/segment_x');
    assert.deepEqual(
      planSegments(elsewhere).map((segment) => segment.key),
      planSegments(local).map((segment) => segment.key),
    );
  });

  it('are not made for a plan whose picture source only a local path names', () => {
    assert.equal(portablePlan(plan('/work', null)), undefined);
  });

  it('name the stored media of a content id', () => {
    assert.deepEqual(mediaOf('med_a.png "e1"'), { mediaId: 'med_a.png', etag: '"e1"' });
    assert.deepEqual(mediaOf('med_a.png'), { mediaId: 'med_a.png', etag: '' });
  });

  it('are taken only in their own shape', () => {
    const item: SegmentItem = {
      export_id: 'ex_1',
      user_id: 'usr_1',
      project_id: 'vp_1',
      key: 'k',
      deadline: 1,
      plan: portablePlan(plan('/w'))!,
    };
    assert.deepEqual(parseItem(JSON.parse(JSON.stringify(item))), item);
    assert.equal(parseItem(null), undefined);
    assert.equal(parseItem({ ...item, key: '' }), undefined);
    assert.equal(parseItem({ ...item, deadline: '1' }), undefined);
    assert.equal(parseItem({ ...item, plan: { picture: [] } }), undefined);
    const noContent = { ...item, plan: { ...item.plan, picture: [{ source: { path: '' } }] } };
    assert.equal(parseItem(noContent), undefined);
  });
});

describe('an item a node turns away for now', () => {
  it('comes back between half a second and a second later, spread over that span', () => {
    // Each item draws its own delay: uniform draws spread them evenly over the span.
    const draws = [0, 0.2, 0.5, 0.8, 0.999_999];
    assert.deepEqual(
      draws.map((draw) => notNowDelayMs(() => draw)),
      [500, 600, 750, 900, 1000],
    );
  });
});
