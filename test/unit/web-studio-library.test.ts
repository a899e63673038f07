// The studio library grid's pure parts (web/src/studio/library-tiles.ts): duration badges and the search.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assetClock, formatClock, matchesSearch } from '../../web/src/studio/library-tiles.ts';
import type { Asset } from '../../web/src/api-types.ts';

function asset(metadata: Record<string, unknown>): Asset {
  return {
    id: 'va_1',
    kind: 'video',
    source: 'upload',
    url: 'http://127.0.0.1/media/med_1.mp4',
    metadata,
    created_at: new Date(0).toISOString(),
  } as Asset;
}

describe('library tiles', () => {
  it('formats durations as a clock', () => {
    assert.equal(formatClock(5), '0:05');
    assert.equal(formatClock(4.6), '0:05');
    assert.equal(formatClock(0), '0:00');
    assert.equal(formatClock(62), '1:02');
    assert.equal(formatClock(600), '10:00');
    assert.equal(formatClock(3723), '1:02:03');
    assert.equal(formatClock(36000), '10:00:00');
  });

  it('gives no clock for stills, missing and odd lengths', () => {
    assert.equal(formatClock(undefined), undefined);
    assert.equal(formatClock(Number.NaN), undefined);
    assert.equal(formatClock(-1), undefined);
    assert.equal(assetClock(asset({})), undefined);
    assert.equal(assetClock(asset({ duration_sec: '5' })), undefined);
    assert.equal(assetClock(asset({ duration_sec: 5 })), '0:05');
  });

  it('finds assets by name and by prompt, ignoring case, every word', () => {
    const named = asset({ name: 'Harbour At Night' });
    const prompted = asset({ prompt: 'A lighthouse at dawn, wide angle' });
    assert.equal(matchesSearch(named, 'Harbour At Night', ''), true);
    assert.equal(matchesSearch(named, 'Harbour At Night', '  '), true);
    assert.equal(matchesSearch(named, 'Harbour At Night', 'harbour'), true);
    assert.equal(matchesSearch(named, 'Harbour At Night', 'NIGHT harb'), true);
    assert.equal(matchesSearch(named, 'Harbour At Night', 'lighthouse'), false);
    assert.equal(matchesSearch(prompted, 'A lighthouse at dawn', 'WIDE angle'), true);
    assert.equal(matchesSearch(prompted, 'A lighthouse at dawn', 'harbour'), false);
  });
});
