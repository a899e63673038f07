import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fnv1a32, partitionOf } from '../../src/platform/core/actor-partition.ts';

describe('actor partitions', () => {
  it('hashes with 32-bit FNV-1a (published test vectors)', () => {
    assert.equal(fnv1a32(''), 0x811c9dc5);
    assert.equal(fnv1a32('a'), 0xe40c292c);
    assert.equal(fnv1a32('foobar'), 0xbf9cf968);
  });

  it('maps keys to the same partitions forever (changing these breaks ordering on a running cluster)', () => {
    // Written down once, cross-checked with an independent FNV-1a (Python); any new code must reproduce them.
    assert.deepEqual(
      ['usr_8fK2mQx1Lp0aZr7T', 'prj_0000000000000000', 'a', 'foobar'].map((key) => [
        fnv1a32(key),
        partitionOf(key, 64),
      ]),
      [
        [0x50af9bb8, 56],
        [0x2726e8b8, 56],
        [0xe40c292c, 44],
        [0xbf9cf968, 40],
      ],
    );
  });

  it('hashes the UTF-8 bytes, so non-ASCII keys are stable too', () => {
    assert.equal(fnv1a32('é'), fnv1a32(Buffer.from([0xc3, 0xa9]).toString('utf8')));
    assert.notEqual(fnv1a32('é'), fnv1a32('e'));
  });

  it('always gives a partition in range, and spreads ids evenly', () => {
    const counts = new Array<number>(64).fill(0);
    for (let i = 0; i < 64_000; i++) {
      const partition = partitionOf(`usr_${i.toString(36)}`, 64);
      assert.ok(Number.isInteger(partition) && partition >= 0 && partition < 64);
      counts[partition]!++;
    }
    for (const count of counts) assert.ok(count > 700 && count < 1300, `uneven partition: ${count} of 64000`);
    assert.equal(partitionOf('anything', 1), 0);
  });
});
