// Settling after a chaos load stopped: the cluster finishes the work in flight (jobs, refunds,
// webhook deliveries, events to the clients) before the checks look at the outcome.
import type { MongoClient } from 'mongodb';
import { sleep } from '../helpers/wait.ts';
import type { ChaosLoad } from './chaos-load.ts';
import { allJobs, headSeqs, isOk, readAdmin, TERMINAL, type LedgerEntry } from './check-reads.ts';
import type { Figure } from './figures.ts';

/**
 * After the load stopped: waits (up to `limitMs`) until every job is terminal, every terminal job's delivery
 * was answered 2xx, and every events client has the project's head seq. Returns how long it took and what
 * was still outstanding at the limit (the invariants then say which).
 */
export async function settle(load: ChaosLoad, mongo: MongoClient, limitMs: number): Promise<Figure> {
  const started = Date.now();
  let outstanding: string[] = [];
  /** What was outstanding when the load stopped, with how it was then. */
  const first = new Map<string, string>();
  let round = 0;
  while (Date.now() - started < limitMs) {
    outstanding = [];
    const note = (key: string, what: string) => {
      outstanding.push(what);
      if (round === 0) first.set(key, what);
    };
    for (const user of load.users) {
      const listed = await allJobs(load, user.token);
      const { entries } = await readAdmin<{ entries: LedgerEntry[] }>(load, `/users/${user.userId}/ledger`);
      const visible = new Set(listed.map((job) => job.job_id));
      const refunded = new Set(entries.filter((one) => one.reason === 'refund').map((one) => one.job_id));
      for (const charge of entries.filter((one) => one.reason === 'job' && one.job_id)) {
        if (!visible.has(charge.job_id!) && !refunded.has(charge.job_id))
          note(charge.job_id!, `refund of the charge of ${charge.job_id}, a submit that never became a job`);
      }
      for (const job of listed) {
        if (!TERMINAL.has(job.status)) note(job.job_id, `job ${job.job_id} ${job.status}`);
        else if (!load.webhooks.seen.some((seen) => seen.jobId === job.job_id && isOk(seen.answered)))
          note(job.job_id, `delivery of ${job.job_id} (${job.status})`);
      }
    }
    const heads = await headSeqs(load, mongo);
    for (const project of load.allProjects()) {
      const head = heads.get(project.id) ?? 0;
      for (const client of project.clients) {
        if (client.lastSeq < head) note(client.label, `${client.label} at ${client.lastSeq} of ${head}`);
      }
    }
    round++;
    if (outstanding.length === 0) break;
    await sleep(1000);
  }
  const tookMs = Date.now() - started;
  const waitedFor = [...first.values()];
  return {
    name: 'settle',
    line:
      `settle: ${(tookMs / 1000).toFixed(1)} s until every job was terminal, delivered and every client caught up` +
      (waitedFor.length ? ` (outstanding when the load stopped: ${waitedFor.length})` : '') +
      (outstanding.length ? `; still outstanding: ${outstanding.length}` : ''),
    problems: outstanding.slice(0, 20).map((what) => `still outstanding after ${limitMs} ms: ${what}`),
    notes: tookMs > 5000 ? waitedFor.slice(0, 10).map((what) => `waited for: ${what}`) : [],
  };
}
