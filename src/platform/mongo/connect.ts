import { MongoClient, type Db } from 'mongodb';

/**
 * Which MongoDB-wire server answers, from its own `buildInfo`. `jongodb` is the in-memory server of tests and
 * embedded mode; anything else is taken for MongoDB.
 */
export interface MongoServer {
  kind: 'mongodb' | 'jongodb';
  /** `buildInfo.version` as the server reports it (`7.0.14`, `8.0.0-jongodb`). */
  version: string;
}

/** An open MongoDB connection and the service's database. */
export interface MongoConnection {
  client: MongoClient;
  db: Db;
  /** The server behind the connection, read once at connect. */
  server: MongoServer;
  /** True when the server answers a ping within the time-out. */
  ping(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Connects to MongoDB (the polling monitor: the streaming one crashed against jongodb under load). */
export async function connectMongo(url: string, dbName: string): Promise<MongoConnection> {
  const client = new MongoClient(url, {
    serverMonitoringMode: 'poll',
    serverSelectionTimeoutMS: 10_000,
    maxPoolSize: 50,
  });
  await client.connect();
  const db = client.db(dbName);
  let server: MongoServer;
  try {
    server = await detectMongoServer(db);
  } catch (error) {
    await client.close();
    throw error;
  }
  return {
    client,
    db,
    server,
    async ping(timeoutMs = 2000) {
      try {
        await db.command({ ping: 1 }, { timeoutMS: timeoutMs });
        return true;
      } catch {
        return false;
      }
    },
    close: () => client.close(),
  };
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

/** True for MongoDB's duplicate-key error (a unique index refused the write). */
export function isDuplicateKeyError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 11000;
}
