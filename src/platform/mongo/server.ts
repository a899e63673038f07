import type { Db } from 'mongodb';

/**
 * Which MongoDB-wire server answers, from its own `buildInfo`. `jongodb` is the in-memory server of tests and
 * embedded mode; anything else is taken for MongoDB.
 */
export interface MongoServer {
  kind: 'mongodb' | 'jongodb';
  /** `buildInfo.version` as the server reports it (`7.0.14`, `8.0.0-jongodb`). */
  version: string;
}

/**
 * Asks the server what it is (`buildInfo`, which needs no privileges). jongodb answers a fixed
 * `gitVersion: 'jongodb'` (and `version: '8.0.0-jongodb'`); a real mongod answers the 40-hex commit it was
 * built from. `hello` cannot tell them apart: jongodb's has the same fields as a replica-set primary's.
 */
export async function detectMongoServer(db: Db): Promise<MongoServer> {
  const info = await db.admin().buildInfo();
  const version = typeof info.version === 'string' ? info.version : 'unknown';
  const jongodb = info.gitVersion === 'jongodb' || /jongodb/i.test(version);
  return { kind: jongodb ? 'jongodb' : 'mongodb', version };
}
