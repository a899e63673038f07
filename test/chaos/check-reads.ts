// What the chaos checks read of the service: its public and admin API, which must answer 200 by
// the time they run (the cluster is whole again), and MongoDB directly where the API shows nothing (a
// project's event counter, the ledger's sequence numbers, the turn leases).
import { MongoClient } from 'mongodb';
import type { LocalCluster } from '../helpers/local-cluster.ts';
import { sleep } from '../helpers/wait.ts';
import type { ChaosLoad } from './chaos-load.ts';

/** The job statuses that are final. */
export const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/** The service's database (MONGO_DB, as for the service; 'mediaforge' by default). */
export const MONGO_DB = process.env.MONGO_DB ?? 'mediaforge';

/** A job as `GET /api/v1/jobs` lists it (the fields the checks read). */
export interface Job {
  job_id: string;
  status: string;
  credits_consumed: number;
  refunded_credits: number;
}

export type { LedgerEntry } from '../helpers/editor.ts';

/** An API call of the checks: it must answer 200 (the cluster is whole again by now). */
export async function readApi<T>(load: ChaosLoad, path: string, token: string): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const answer = await load.traffic.send({ actor: 'check', op: 'check', method: 'GET', path, token });
    if (answer.status === 200) return answer.body as T;
    if (attempt >= 5) throw new Error(`check ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    await sleep(500);
  }
}

/** An admin API call of the checks, as `readApi`. */
export const readAdmin = <T>(load: ChaosLoad, path: string) =>
  readApi<T>(load, `/api/admin/v1${path}`, load.traffic.cluster.adminToken);

/** Every job of a user's key, through `GET /api/v1/jobs` page by page. */
export async function allJobs(load: ChaosLoad, token: string): Promise<Job[]> {
  const jobs: Job[] = [];
  let cursor: string | null = null;
  do {
    const page: { jobs: Job[]; next_cursor: string | null } = await readApi(
      load,
      `/api/v1/jobs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      token,
    );
    jobs.push(...page.jobs);
    cursor = page.next_cursor;
  } while (cursor);
  return jobs;
}

/** The head seq of each of the load's projects (the project document's event counter). */
export async function headSeqs(load: ChaosLoad, mongo: MongoClient): Promise<Map<string, number>> {
  const docs = await mongo
    .db(MONGO_DB)
    .collection<{ _id: string; seq: number }>('projects')
    .find({ _id: { $in: load.allProjects().map((project) => project.id) } })
    .toArray();
  return new Map(docs.map((doc) => [doc._id, doc.seq]));
}

/** A client of the cluster's MongoDB for the checks that read it directly. */
export function connectMongo(cluster: LocalCluster): Promise<MongoClient> {
  return new MongoClient(cluster.mongoUrl, { serverMonitoringMode: 'poll' }).connect();
}

/** A 2xx answer (null: none came). */
export const isOk = (status: number | null) => status !== null && status >= 200 && status <= 299;
