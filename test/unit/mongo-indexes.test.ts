// Retiring an index an earlier version created: only what the collection has is dropped (jongodb, which starts
// empty and has no dropIndexes, is never asked), a collection not created yet and a drop lost to another node
// are no error, anything else is. The MongoDB side of this cannot run here (jongodb cannot drop): a fake
// collection answers as MongoDB does.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Collection, Document } from 'mongodb';
import { dropIndexesIfPresent } from '../../src/platform/mongo/indexes.ts';

/** A collection with `names` as its indexes; `dropError`/`listError` make those calls fail with a code. */
function fakeCollection(names: string[], options: { listError?: number; dropError?: number } = {}) {
  const dropped: string[] = [];
  const failure = (code: number) => Object.assign(new Error(`code ${code}`), { code });
  const collection = {
    listIndexes: () => ({
      toArray: async () => {
        if (options.listError !== undefined) throw failure(options.listError);
        return names.map((name) => ({ name, key: {} }));
      },
    }),
    dropIndex: async (name: string) => {
      if (options.dropError !== undefined) throw failure(options.dropError);
      dropped.push(name);
    },
  };
  return { dropped, collection: collection as unknown as Collection<Document> };
}

describe('dropIndexesIfPresent', () => {
  it('drops the named indexes the collection has, and only those', async () => {
    const { collection, dropped } = fakeCollection(['_id_', 'by_user_seq', 'op_once']);
    await dropIndexesIfPresent(collection, ['by_user_seq', 'never_made']);
    assert.deepEqual(dropped, ['by_user_seq']);
  });

  it('asks nothing of a server whose collection has none of them (a fresh jongodb)', async () => {
    const { collection, dropped } = fakeCollection(['_id_'], { dropError: 59 });
    await dropIndexesIfPresent(collection, ['by_user_seq']);
    assert.deepEqual(dropped, []);
  });

  it('takes a collection not created yet as having no index', async () => {
    const { collection, dropped } = fakeCollection([], { listError: 26 });
    await dropIndexesIfPresent(collection, ['by_user_seq']);
    assert.deepEqual(dropped, []);
  });

  it('takes a drop another node made first as done', async () => {
    const { collection } = fakeCollection(['by_user_seq'], { dropError: 27 });
    await dropIndexesIfPresent(collection, ['by_user_seq']);
  });

  it('lets any other failure through', async () => {
    await assert.rejects(
      () =>
        dropIndexesIfPresent(fakeCollection(['by_user_seq'], { dropError: 13 }).collection, ['by_user_seq']),
      { code: 13 },
    );
    await assert.rejects(
      () => dropIndexesIfPresent(fakeCollection([], { listError: 13 }).collection, ['by_user_seq']),
      { code: 13 },
    );
  });
});
