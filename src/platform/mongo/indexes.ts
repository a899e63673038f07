import type { Collection, Document } from 'mongodb';

const NAMESPACE_NOT_FOUND = 26;
const INDEX_NOT_FOUND = 27;

/**
 * Drops those of `names` that `collection` has: indexes an earlier version defined differently (MongoDB refuses
 * a changed definition under the old name, and a second index on the same key). Only what is found is
 * dropped, so a server that starts empty (jongodb, which has no `dropIndexes` at all) is never asked to. Run
 * before creating the new definitions; nodes starting together may race, and a lost race is no error.
 */
export async function dropIndexesIfPresent<T extends Document>(
  collection: Collection<T>,
  names: readonly string[],
): Promise<void> {
  let present: string[];
  try {
    present = (await collection.listIndexes().toArray()).map((index) => String(index.name));
  } catch (error) {
    if (codeOf(error) === NAMESPACE_NOT_FOUND) return; // no collection yet: no index either
    throw error;
  }
  for (const name of names.filter((retired) => present.includes(retired))) {
    try {
      await collection.dropIndex(name);
    } catch (error) {
      if (codeOf(error) !== INDEX_NOT_FOUND && codeOf(error) !== NAMESPACE_NOT_FOUND) throw error;
    }
  }
}

const codeOf = (error: unknown): unknown => (error as { code?: unknown } | null)?.code;
