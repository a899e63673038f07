import type { Db } from 'mongodb';
import type { AssetRecord, AssetsRepository } from '../../../actors/index.ts';
import { isDuplicateKeyError } from '../../platform/index.ts';

type AssetDoc = Omit<AssetRecord, 'id'> & { _id: string };

const toRecord = ({ _id, ...rest }: AssetDoc): AssetRecord => ({ id: _id, ...rest });

/** Project assets in the `project_assets` collection. */
export async function createMongoAssets(db: Db): Promise<AssetsRepository> {
  const assets = db.collection<AssetDoc>('project_assets', { ignoreUndefined: true });
  await assets.createIndexes([
    { key: { project_id: 1, created_at: 1, _id: 1 }, name: 'by_project_age' },
    // One asset per generated job (its id derives from the job's); sparse: uploads and imports have no job.
    { key: { 'metadata.job_id': 1 }, name: 'one_per_job', unique: true, sparse: true },
  ]);

  return {
    async put(asset) {
      const { id, ...rest } = asset;
      try {
        // $setOnInsert: a redelivered command stores nothing new and never rewrites what the first one stored.
        await assets.updateOne({ _id: id }, { $setOnInsert: rest }, { upsert: true });
      } catch (error) {
        // Two concurrent upserts of one id: MongoDB may refuse the second with a duplicate key; it is stored.
        // Refused by `one_per_job` instead (another id for the same job), nothing is stored: that is an error.
        if (!isDuplicateKeyError(error) || !(await assets.findOne({ _id: id }))) throw error;
      }
    },
    async get(id) {
      const doc = await assets.findOne({ _id: id });
      return doc ? toRecord(doc) : null;
    },
    async updateMetadata(id, metadata) {
      const fields = Object.entries(metadata);
      if (fields.some(([key]) => key === '' || key.includes('.') || key.startsWith('$'))) {
        throw new Error('metadata keys are plain names');
      }
      if (fields.length === 0) {
        const doc = await assets.findOne({ _id: id });
        return doc ? toRecord(doc) : null;
      }
      // Dotted paths set only these keys: metadata written meanwhile by anyone else stays.
      const set = Object.fromEntries(fields.map(([key, value]) => [`metadata.${key}`, value]));
      const doc = await assets.findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: 'after' });
      return doc ? toRecord(doc) : null;
    },
    async listByProject(projectId) {
      const docs = await assets.find({ project_id: projectId }).sort({ created_at: 1, _id: 1 }).toArray();
      return docs.map(toRecord);
    },
    async deleteByProject(projectId) {
      const docs = await assets.find({ project_id: projectId }).toArray();
      if (docs.length === 0) return [];
      // By the ids read, not by project: the answer is then exactly what went, so the caller (who owns the
      // files) never loses track of a record removed without being reported.
      await assets.deleteMany({ _id: { $in: docs.map((doc) => doc._id) } });
      return docs.map(toRecord);
    },
  };
}
