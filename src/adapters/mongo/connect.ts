import { MongoClient, type Db } from 'mongodb';

/** An open MongoDB connection and the service's database. */
export interface MongoConnection {
  client: MongoClient;
  db: Db;
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
  return {
    client,
    db,
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

/** True for MongoDB's duplicate-key error (a unique index refused the write). */
export function isDuplicateKeyError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 11000;
}
