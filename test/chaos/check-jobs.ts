// The jobs and webhooks check of a chaos run: every job terminal and delivered once under its one
// delivery id. jongodb does not make the delivery's state moves atomic across nodes (see check-ledger.ts), so
// repeated attempts are counted and each must be explained by a node killed mid-attempt.
import type { ChaosLoad } from './chaos-load.ts';
import { allJobs, isOk, TERMINAL, type Job } from './check-reads.ts';
import type { Figure } from './figures.ts';

/** A node that dies within this long after an attempt arrived may have died mid-attempt (before recording it). */
const MID_ATTEMPT_WINDOW_MS = 3000;

/**
 * Jobs and webhooks: every job (listed by the API, or acknowledged) is terminal; every terminal job reached the
 * receiver under exactly one delivery id (`dlv_<job suffix>`), with the event of its status and a signature that
 * verifies, answered 2xx once — a further attempt of the same delivery only where an earlier one arrived just
 * before a node was killed (that node died mid-attempt, before recording it).
 */
export async function checkJobsAndWebhooks(load: ChaosLoad): Promise<Figure> {
  const problems: string[] = [];
  const notes: string[] = [];
  const jobs = new Map<string, Job>();
  for (const user of load.users) for (const job of await allJobs(load, user.token)) jobs.set(job.job_id, job);
  for (const [jobId, known] of load.jobs) {
    if (known.acknowledged && !jobs.has(jobId)) problems.push(`acknowledged job ${jobId} is not listed`);
  }
  const statuses = new Map<string, number>();
  for (const job of jobs.values()) {
    statuses.set(job.status, (statuses.get(job.status) ?? 0) + 1);
    if (!TERMINAL.has(job.status)) problems.push(`job ${job.job_id} is ${job.status}`);
  }
  const kills = load.traffic.disruptions.filter((d) => d.kind === 'kill');
  const midAttempt = (at: number) =>
    kills.some((kill) => at <= (kill.goneAt ?? kill.at) && at >= kill.at - MID_ATTEMPT_WINDOW_MS);
  let delivered = 0;
  let requests = 0;
  let repeats = 0;
  let explainedRepeats = 0;
  let badSignatures = 0;
  /** Attempts whose sender went away before the receiver answered (its node was killed), and what followed. */
  let cut = 0;
  let cutThenDelivered = 0;
  const expectedAttempts = load.webhooks.failFirst ? 2 : 1;
  const seenByJob = new Map<string, typeof load.webhooks.seen>();
  for (const seen of load.webhooks.seen)
    seenByJob.set(seen.jobId, [...(seenByJob.get(seen.jobId) ?? []), seen]);
  for (const jobId of seenByJob.keys()) {
    if (!jobs.has(jobId)) problems.push(`a delivery for job ${jobId}, which no user of the load has`);
  }
  for (const job of jobs.values()) {
    if (!TERMINAL.has(job.status)) continue;
    const seen = seenByJob.get(job.job_id) ?? [];
    requests += seen.length;
    const ids = new Set(seen.map((one) => one.deliveryId));
    if (seen.length === 0) {
      problems.push(`job ${job.job_id} (${job.status}): no delivery reached the receiver`);
      continue;
    }
    if (ids.size !== 1)
      problems.push(`job ${job.job_id}: ${ids.size} delivery ids ${JSON.stringify([...ids])}`);
    const expectedId = `dlv_${job.job_id.replace(/^job_/, '')}`;
    if (!ids.has(expectedId)) problems.push(`job ${job.job_id}: delivery id ${[...ids].join(',')}`);
    const event =
      job.status === 'completed' ? 'job.completed' : job.status === 'failed' ? 'job.failed' : undefined;
    if (event && seen.some((one) => one.event !== event))
      problems.push(`job ${job.job_id} (${job.status}): events ${seen.map((one) => one.event).join(',')}`);
    badSignatures += seen.filter((one) => !one.signatureOk).length;
    const cutHere = seen.filter((one) => one.answered === null);
    cut += cutHere.length;
    if (cutHere.length > 0 && isOk(seen.at(-1)!.answered)) cutThenDelivered += cutHere.length;
    for (const one of cutHere) {
      if (!midAttempt(one.at))
        problems.push(
          `job ${job.job_id}: an attempt at ${new Date(one.at).toISOString()} was cut, but no node was killed then`,
        );
    }
    const oks = seen.filter((one) => isOk(one.answered));
    if (oks.length >= 1) delivered++;
    else
      problems.push(`job ${job.job_id}: never answered 2xx (${seen.map((one) => one.answered).join(',')})`);
    // Attempts beyond the scripted ones (500 first when failFirst, then 200) are repeats.
    const extra = Math.max(0, seen.length - expectedAttempts, oks.length - 1);
    if (extra > 0) {
      repeats += extra;
      const explained = seen.slice(0, -1).some((one) => midAttempt(one.at));
      if (explained) {
        explainedRepeats += extra;
        notes.push(
          `job ${job.job_id}: ${seen.length} attempts (${seen.map((one) => `${new Date(one.at).toISOString().slice(17, 23)}→${one.answered ?? 'gone'}`).join(', ')}); a node was killed mid-attempt`,
        );
      } else {
        problems.push(
          `job ${job.job_id}: ${seen.length} attempts, ${oks.length} answered 2xx, no node killed mid-attempt: ${JSON.stringify(seen)}`,
        );
      }
    }
  }
  if (badSignatures > 0) problems.push(`${badSignatures} deliveries whose signature does not verify`);
  const byStatus = [...statuses].map(([status, n]) => `${n} ${status}`).join(', ');
  return {
    name: 'jobs and webhooks',
    line:
      `jobs: ${jobs.size} jobs (${byStatus}), ${[...jobs.values()].filter((job) => TERMINAL.has(job.status)).length} terminal; ` +
      `webhooks: ${delivered} delivered under one delivery id each, ${requests} requests, ${repeats} repeated attempts ` +
      `(${explainedRepeats} after a node died mid-attempt), ${cut} attempts whose sender went away before the answer, as the receiver saw it (${cutThenDelivered} then delivered), ${badSignatures} bad signatures`,
    problems,
    notes,
  };
}
