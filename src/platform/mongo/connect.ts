import { MongoClient, type Db, type MongoClientOptions } from 'mongodb';
import { mongoCompatFor, type MongoCompat } from './compat.ts';
import { detectMongoServer, type MongoServer } from './server.ts';

/** An open MongoDB connection and the service's database. */
export interface MongoConnection {
  client: MongoClient;
  db: Db;
  /** The server behind the connection, read once at connect (for logs; adapters ask `compat`). */
  server: MongoServer;
  /** What the service does differently on this server, chosen once at connect. */
  compat: MongoCompat;
  /** True when the server answers a ping within the time-out. */
  ping(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Connects to MongoDB. The first client polls the server (every server takes that, and which server answers
 * is not known yet); once the server has said what it is, a MongoDB gets a client with the driver's own
 * monitor (streaming), and jongodb keeps the polling one (the streaming monitor crashed against it under load).
 */
export async function connectMongo(url: string, dbName: string): Promise<MongoConnection> {
  let client = await openClient(url, 'poll');
  let compat: MongoCompat;
  try {
    compat = mongoCompatFor(await detectMongoServer(client.db(dbName)));
  } catch (error) {
    await client.close();
    throw error;
  }
  if (compat.monitoring !== 'poll') {
    const first = client;
    try {
      client = await openClient(url, compat.monitoring);
    } finally {
      await first.close();
    }
  }
  const db = client.db(dbName);
  return {
    client,
    db,
    server: compat.server,
    compat,
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

async function openClient(
  url: string,
  monitoring: NonNullable<MongoClientOptions['serverMonitoringMode']>,
): Promise<MongoClient> {
  const client = new MongoClient(url, {
    serverMonitoringMode: monitoring,
    serverSelectionTimeoutMS: 10_000,
    maxPoolSize: 50,
  });
  await client.connect();
  return client;
}

/** True for MongoDB's duplicate-key error (a unique index refused the write). */
export function isDuplicateKeyError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 11000;
}
