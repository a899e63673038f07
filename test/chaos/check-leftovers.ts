// The leftovers check of a chaos run: nothing of the cluster's work outlives it, no ffmpeg child
// (found with `ps`) and no turn lease or queued turn on a project (read in MongoDB).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { MongoClient } from 'mongodb';
import type { LocalCluster } from '../helpers/local-cluster.ts';
import { sleep } from '../helpers/wait.ts';
import type { ChaosLoad } from './chaos-load.ts';
import { MONGO_DB } from './check-reads.ts';
import type { Figure } from './figures.ts';

/** ffmpeg/ffprobe processes of the cluster's service nodes (their session, or their environment names this cluster). */
export function clusterFfmpeg(cluster: LocalCluster, nodePids: Set<number>, since: number): string[] {
  let table: string;
  try {
    table = execFileSync('ps', ['-eo', 'pid=,ppid=,sid=,etimes=,args='], { encoding: 'utf8' });
  } catch {
    return [];
  }
  const maxAge = Math.ceil((Date.now() - since) / 1000) + 1;
  const found: string[] = [];
  for (const line of table.split('\n')) {
    const match = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    if (!match) continue;
    const [, pid, ppid, sid, etimes, args] = match;
    if (!/ff(mpeg|probe)/.test(args!.split(' ')[0] ?? '')) continue;
    if (Number(etimes) > maxAge) continue;
    let ours = nodePids.has(Number(sid)) || nodePids.has(Number(ppid));
    if (!ours) {
      try {
        ours = readFileSync(`/proc/${pid}/environ`, 'utf8')
          .split('\0')
          .includes(`MONGO_URL=${cluster.mongoUrl}`);
      } catch {
        /* gone, or not ours to read */
      }
    }
    if (ours) found.push(`pid ${pid} ppid ${ppid} sid ${sid} age ${etimes}s: ${args!.slice(0, 120)}`);
  }
  return found;
}

/**
 * Leftovers: no ffmpeg child of a cluster node is still running (after a short grace for renders the load's
 * last requests began), and no project of the load holds a turn (an unexpired lease, or an expired one the
 * sweep left) or a queued turn.
 */
export async function checkLeftovers(
  load: ChaosLoad,
  mongo: MongoClient,
  nodePids: Set<number>,
  options: { graceMs?: number } = {},
): Promise<Figure> {
  const problems: string[] = [];
  const deadline = Date.now() + (options.graceMs ?? 5000);
  let ffmpeg = clusterFfmpeg(load.traffic.cluster, nodePids, load.startedAt);
  while (ffmpeg.length > 0 && Date.now() < deadline) {
    await sleep(500);
    ffmpeg = clusterFfmpeg(load.traffic.cluster, nodePids, load.startedAt);
  }
  for (const process of ffmpeg) problems.push(`ffmpeg left running: ${process}`);
  const docs = await mongo
    .db(MONGO_DB)
    .collection<{
      _id: string;
      turn: { turn_id: string; lease_until: Date; node_id: string } | null;
      queue: unknown[];
    }>('projects')
    .find({ _id: { $in: load.allProjects().map((project) => project.id) } })
    .toArray();
  const now = Date.now();
  let unexpired = 0;
  let expired = 0;
  let queued = 0;
  for (const doc of docs) {
    if (doc.turn) {
      const until = new Date(doc.turn.lease_until).getTime();
      if (until > now) unexpired++;
      else expired++;
      problems.push(
        `project ${doc._id} still holds turn ${doc.turn.turn_id} of ${doc.turn.node_id}, lease ${until > now ? 'until' : 'lapsed at'} ${new Date(until).toISOString()}`,
      );
    }
    if (doc.queue?.length) {
      queued += doc.queue.length;
      problems.push(`project ${doc._id} has ${doc.queue.length} queued turns`);
    }
  }
  return {
    name: 'leftovers',
    line: `leftovers: ${ffmpeg.length} ffmpeg processes of the cluster's nodes; ${docs.length} projects: ${unexpired} unexpired turn leases, ${expired} lapsed leases not cleared, ${queued} queued turns`,
    problems,
  };
}
