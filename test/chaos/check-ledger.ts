// The ledger check of a chaos run: every acknowledged credit operation once, balances that add up,
// refunds once and only where due, and each user's ledger one serialised chain.
//
// jongodb (the test MongoDB server) applies conditional updates (`updateOne` filtered on a version, a state)
// non-atomically across connections: two nodes racing the same guarded update can both match. On real MongoDB
// the ledger's commit (the user document guarded on its ledger sequence) and the job and delivery state moves
// cannot both win; here they could, so "applied exactly once" is not proven by the guard alone. What is checked
// instead is that the actors serialised them: every user's ledger is one chain (sequence numbers 1..n without a
// repeat or a gap, each balance the previous one plus its delta) — a lost race would show as two entries with
// one seq or a balance that skips — and every job moved once (one charge, at most one refund, one delivery id).
import type { MongoClient } from 'mongodb';
import type { ChaosLoad } from './chaos-load.ts';
import { allJobs, MONGO_DB, readAdmin, readApi, type LedgerEntry } from './check-reads.ts';
import type { Figure } from './figures.ts';

/**
 * Ledger: every credit operation acknowledged to a caller is in the ledger exactly once (grants by op_id, turn
 * charges by `turn:<id>`, job charges by job id), no op_id twice, every job refunded at most once and exactly
 * when it failed or was cancelled, and each user's balance equals its ledger's sum (the opening balance is
 * the ledger's first grant). The ledger's own chain (MongoDB: seq 1..n, each balance the previous plus delta)
 * shows the user actor serialised the changes (see the file's comment on jongodb).
 */
export async function checkLedger(load: ChaosLoad, mongo: MongoClient): Promise<Figure> {
  const problems: string[] = [];
  let entriesTotal = 0;
  let matched = 0;
  let missing = 0;
  let duplicated = 0;
  let refunds = 0;
  let chainBreaks = 0;
  let unlistedCharges = 0;
  let unlistedRefunded = 0;
  for (const user of load.users) {
    const { entries: newestFirst } = await readAdmin<{ entries: LedgerEntry[] }>(
      load,
      `/users/${user.userId}/ledger`,
    );
    if (newestFirst.length >= 1000) problems.push(`${user.label}: ledger read capped at 1000 entries`);
    const entries = [...newestFirst].reverse();
    entriesTotal += entries.length;
    // The chain as the API lists it.
    let balance = 0;
    for (const entry of entries) {
      balance += entry.delta;
      if (entry.balance_after !== balance) {
        chainBreaks++;
        problems.push(
          `${user.label}: entry ${entry.id} balance_after ${entry.balance_after}, expected ${balance}`,
        );
        balance = entry.balance_after;
      }
    }
    const sum = entries.reduce((total, entry) => total + entry.delta, 0);
    const { credits } = await readApi<{ credits: number }>(load, '/api/v1/account', user.token);
    if (credits !== sum) problems.push(`${user.label}: balance ${credits}, ledger sum ${sum}`);
    const initial = entries.filter((entry) => entry.reason === 'initial_grant');
    if (initial.length !== 1 || initial[0]!.delta !== user.initialCredits)
      problems.push(`${user.label}: opening grant ${JSON.stringify(initial)}`);
    const byOp = new Map<string, LedgerEntry[]>();
    for (const entry of entries) {
      if (!entry.op_id) continue;
      byOp.set(entry.op_id, [...(byOp.get(entry.op_id) ?? []), entry]);
    }
    for (const [opId, list] of byOp) {
      if (list.length > 1) {
        duplicated += list.length - 1;
        problems.push(`${user.label}: op_id ${opId} ${list.length} times`);
      }
    }
    // Acknowledged operations.
    for (const op of load.acknowledged.filter((one) => one.userId === user.userId)) {
      const found =
        op.kind === 'job'
          ? entries.filter((entry) => entry.job_id === op.jobId && entry.reason === 'job')
          : (byOp.get(op.opId!) ?? []);
      if (found.length === 0) {
        missing++;
        problems.push(
          `${user.label}: acknowledged ${op.kind} ${op.opId ?? op.jobId} (${op.delta}) not in the ledger`,
        );
      } else if (found.length > 1) {
        duplicated += found.length - 1;
        problems.push(`${user.label}: acknowledged ${op.kind} ${op.opId ?? op.jobId} ${found.length} times`);
      } else if (found[0]!.delta !== op.delta) {
        problems.push(
          `${user.label}: ${op.kind} ${op.opId ?? op.jobId}: delta ${found[0]!.delta}, acknowledged ${op.delta}`,
        );
      } else matched++;
    }
    // Refunds: once, and only for jobs that did not complete.
    const jobs = new Map((await allJobs(load, user.token)).map((job) => [job.job_id, job]));
    const refundsOf = new Map<string, LedgerEntry[]>();
    for (const entry of entries.filter((one) => one.reason === 'refund' && one.job_id)) {
      refundsOf.set(entry.job_id!, [...(refundsOf.get(entry.job_id!) ?? []), entry]);
      refunds++;
    }
    for (const [jobId, list] of refundsOf) {
      const job = jobs.get(jobId);
      if (list.length > 1) problems.push(`${user.label}: job ${jobId} refunded ${list.length} times`);
      if (job?.status === 'completed') problems.push(`${user.label}: completed job ${jobId} refunded`);
      if (job && list[0]!.delta !== job.refunded_credits)
        problems.push(
          `${user.label}: job ${jobId} refund ${list[0]!.delta}, job says ${job.refunded_credits}`,
        );
    }
    for (const job of jobs.values()) {
      if (
        (job.status === 'failed' || job.status === 'cancelled') &&
        job.refunded_credits > 0 &&
        !refundsOf.has(job.job_id)
      )
        problems.push(`${user.label}: ${job.status} job ${job.job_id} has no refund entry`);
    }
    // Charges of submits that never became a job (cut by a kill, or answered 503 after the debit): the job
    // sweeper refunds each once (docs/api.md, Refunds: money is never held in limbo).
    for (const charge of entries.filter(
      (one) => one.reason === 'job' && one.job_id && !jobs.has(one.job_id),
    )) {
      unlistedCharges++;
      const back = refundsOf.get(charge.job_id!) ?? [];
      if (back.length === 1 && back[0]!.delta === -charge.delta) unlistedRefunded++;
      else
        problems.push(
          `${user.label}: charge ${charge.delta} of job ${charge.job_id}, which never became visible, refunded ${JSON.stringify(back.map((one) => one.delta))}`,
        );
    }
    // The stored chain: one entry per seq, 1..n (a lost race on the guarded commit would repeat or skip one).
    const stored = await mongo
      .db(MONGO_DB)
      .collection<{ seq: number }>('ledger')
      .find({ user_id: user.userId })
      .toArray();
    const seqs = stored.map((doc) => doc.seq).sort((a, b) => a - b);
    const contiguous = seqs.every((seq, i) => seq === i + 1);
    if (!contiguous || seqs.length !== entries.length) {
      chainBreaks++;
      problems.push(
        `${user.label}: stored ledger seqs not 1..${entries.length}: ${seqs.length} docs, first break at ${seqs.findIndex((seq, i) => seq !== i + 1)}`,
      );
    }
  }
  const acknowledged = load.acknowledged.length;
  const byKind = ['job', 'grant', 'turn']
    .map((kind) => `${load.acknowledged.filter((op) => op.kind === kind).length} ${kind}s`)
    .join(', ');
  return {
    name: 'ledger',
    line:
      `ledger: ${acknowledged} acknowledged operations (${byKind}), ${matched} found once, ${missing} missing, ` +
      `${duplicated} duplicated; ${entriesTotal} ledger entries over ${load.users.length} users (${refunds} refunds); ` +
      `${unlistedCharges} charges of submits that never became a job, ${unlistedRefunded} of them refunded once; ` +
      `balances = ledger sums: ${problems.some((p) => p.includes('ledger sum')) ? 'NO' : 'yes'}; ` +
      `ledger chains serialised (seq 1..n, balance_after = previous + delta): ${chainBreaks === 0 ? 'yes' : `${chainBreaks} breaks`}`,
    problems,
  };
}
