import { createRequire } from 'node:module';
import { before, after } from 'node:test';
import { MongoClient, type Db } from 'mongodb';
import { watchProcess, stopProcess } from './processes.ts';
import { mongoCompatFor, type MongoCompat } from '../../src/platform/mongo/compat.ts';
import { detectMongoServer } from '../../src/platform/mongo/server.ts';

/** A MongoDB-wire server for one test file. */
export interface TestMongo {
  uri: string;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** Path of the jongodb binary shipped by the optional dependency. */
export function jongodbBinary(): string {
  return require.resolve('@jongodb/memory-server-bin-linux-x64-gnu/bin/jongodb');
}

/**
 * Starts a fresh MongoDB-wire server on a random loopback port: jongodb by default, or a real `mongo:7`
 * replica set through testcontainers when `MF_TEST_MONGO=container` (needs a reachable Docker engine).
 */
export async function startMongo(): Promise<TestMongo> {
  if (process.env.MF_TEST_MONGO === 'container') return startContainerMongo();
  const proc = watchProcess(jongodbBinary(), [
    '--host=127.0.0.1',
    '--port=0',
    '--topology-profile=singleNodeReplicaSet',
    '--replica-set-name=rs0',
  ]);
  const match = await proc.waitForLine(/JONGODB_URI=(\S+)/);
  return {
    uri: match[1]!,
    stop: async () => {
      await stopProcess(proc, 'SIGTERM', 5000);
    },
  };
}

async function startContainerMongo(): Promise<TestMongo> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('mongo:7')
    .withCommand(['--replSet', 'rs0', '--bind_ip_all'])
    .withExposedPorts(27017)
    .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
    .start();
  await container.exec([
    'mongosh',
    '--quiet',
    '--eval',
    `rs.initiate({_id:'rs0',members:[{_id:0,host:'127.0.0.1:27017'}]}); while (!db.hello().isWritablePrimary) sleep(100);`,
  ]);
  const uri = `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/?directConnection=true`;
  return { uri, stop: async () => void (await container.stop()) };
}

/**
 * A fresh server and a connected client for the enclosing test file or `describe`: registers its own
 * `before`/`after` hooks, so call it where those may be called. Read `client`/`uri` inside tests and hooks.
 */
export function useMongoClient(): { readonly client: MongoClient; readonly uri: string } {
  let mongo: TestMongo | undefined;
  let client: MongoClient | undefined;
  before(async () => {
    mongo = await startMongo();
    client = new MongoClient(mongo.uri, { serverMonitoringMode: 'poll' });
    await client.connect();
  });
  after(async () => {
    await client?.close();
    await mongo?.stop();
  });
  return {
    get client() {
      return client!;
    },
    get uri() {
      return mongo!.uri;
    },
  };
}

/** The compatibility the service chooses for the server behind `db` (as `connectMongo` does at connect). */
export async function compatOf(db: Db): Promise<MongoCompat> {
  return mongoCompatFor(await detectMongoServer(db));
}
