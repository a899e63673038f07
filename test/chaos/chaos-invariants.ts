// The checks after a chaos run (issue 17), each returning its figures for the note: a line with counts, and
// the problems it found (an empty list is a pass). They read what the load recorded (chaos-load.ts) and the
// service's own answers (public and admin API), plus MongoDB directly where the API shows nothing (the ledger's
// sequence numbers, the projects' turn leases) and `ps` for ffmpeg children.
//
// jongodb (the test MongoDB server) applies conditional updates (`updateOne` filtered on a version, a state)
// non-atomically across connections: two nodes racing the same guarded update can both match. On real MongoDB
// the ledger's commit (the user document guarded on its ledger sequence) and the job and delivery state moves
// cannot both win; here they could, so "applied exactly once" is not proven by the guard alone. What is checked
// instead is that the actors serialised them: every user's ledger is one chain (sequence numbers 1..n without a
// repeat or a gap, each balance the previous one plus its delta) — a lost race would show as two entries with
// one seq or a balance that skips — and every job moved once (one charge, at most one refund, one delivery id).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { MongoClient } from 'mongodb';
import type { LocalCluster } from '../helpers/local-cluster.ts';
import { sleep } from '../helpers/wait.ts';
import { EventsClient, type ChaosLoad, type Disruption, type RequestRecord } from './chaos-load.ts';

/** One invariant's outcome. */
export interface Figure {
  name: string;
  /** One line of counts for the note. */
  line: string;
  /** What is wrong (empty: it holds). */
  problems: string[];
  /** Known and explained departures, printed but not failing. */
  notes?: string[];
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const MONGO_DB = process.env.MONGO_DB ?? 'mediaforge';
/** A node that dies within this long after an attempt arrived may have died mid-attempt (before recording it). */
const MID_ATTEMPT_WINDOW_MS = 3000;
/** The longest 503 `unavailable` answers may go on after a NATS node goes down (issue 17). */
export const NATS_UNAVAILABLE_LIMIT_MS = 10_000;

interface Job {
  job_id: string;
  status: string;
  credits_consumed: number;
  refunded_credits: number;
}

interface LedgerEntry {
  id: string;
  delta: number;
  balance_after: number;
  reason: string;
  op_id?: string;
  job_id?: string;
  created_at: string;
}

/** An API call of the checks: it must answer 200 (the cluster is whole again by now). */
async function check<T>(load: ChaosLoad, path: string, token: string): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const answer = await load.traffic.send({ actor: 'check', op: 'check', method: 'GET', path, token });
    if (answer.status === 200) return answer.body as T;
    if (attempt >= 5) throw new Error(`check ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    await sleep(500);
  }
}

const admin = <T>(load: ChaosLoad, path: string) =>
  check<T>(load, `/api/admin/v1${path}`, load.traffic.cluster.adminToken);

/** Every job of a user's key, through `GET /api/v1/jobs` page by page. */
async function allJobs(load: ChaosLoad, token: string): Promise<Job[]> {
  const jobs: Job[] = [];
  let cursor: string | null = null;
  do {
    const page: { jobs: Job[]; next_cursor: string | null } = await check(
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
async function headSeqs(load: ChaosLoad, mongo: MongoClient): Promise<Map<string, number>> {
  const docs = await mongo
    .db(MONGO_DB)
    .collection<{ _id: string; seq: number }>('projects')
    .find({ _id: { $in: load.allProjects().map((project) => project.id) } })
    .toArray();
  return new Map(docs.map((doc) => [doc._id, doc.seq]));
}

export function connectMongo(cluster: LocalCluster): Promise<MongoClient> {
  return new MongoClient(cluster.mongoUrl, { serverMonitoringMode: 'poll' }).connect();
}

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
      const { entries } = await admin<{ entries: LedgerEntry[] }>(load, `/users/${user.userId}/ledger`);
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

const isOk = (status: number | null) => status !== null && status >= 200 && status <= 299;

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
    const { entries: newestFirst } = await admin<{ entries: LedgerEntry[] }>(
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
    const { credits } = await check<{ credits: number }>(load, '/api/v1/account', user.token);
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
    // sweeper refunds each once (DESIGN.md §2, "money is never held in limbo").
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

/**
 * Events: each client's events, over all its connections, are the project's full list (seq 1..head) in seq
 * order without a gap or a duplicate, equal to what a fresh socket with `since=0` replays at the end.
 */
export async function checkEvents(load: ChaosLoad, mongo: MongoClient): Promise<Figure> {
  const problems: string[] = [];
  const notes: string[] = [];
  const heads = await headSeqs(load, mongo);
  let clients = 0;
  let events = 0;
  let reconnections = 0;
  const closeCodes = new Map<number, number>();
  let replayed = 0;
  for (const project of load.allProjects()) {
    const head = heads.get(project.id) ?? 0;
    const reference = new EventsClient(
      `${project.id}/reference`,
      project.id,
      project.user.token,
      load.traffic,
    );
    await reference.open(load.traffic.pick(), 0);
    await reference.caughtUp(head, 15_000);
    await reference.close();
    const list = reference.events;
    replayed += list.length;
    const refSeqs = list.map((event) => event.seq);
    if (list.length !== head || refSeqs.some((seq, i) => seq !== i + 1))
      problems.push(
        `${project.id}: the since=0 replay has ${list.length} events for head ${head} (${gapOf(refSeqs)})`,
      );
    for (const failed of list.filter((event) => event.type === 'turn.failed')) {
      const ts = Date.parse(failed.ts);
      const kill = load.traffic.disruptions.filter((d) => d.at <= ts).at(-1);
      notes.push(
        `turn.failed (${JSON.stringify(failed.data)}) in ${project.id}` +
          (kill ? `, ${ts - kill.at} ms after ${kill.kind} ${kill.target}` : ''),
      );
    }
    const bySeq = new Map(list.map((event) => [event.seq, JSON.stringify(event)]));
    for (const client of project.clients) {
      clients++;
      const got = client.events;
      events += got.length;
      reconnections += client.reconnections;
      for (const connection of client.connections) {
        if (connection.closeCode !== undefined)
          closeCodes.set(connection.closeCode, (closeCodes.get(connection.closeCode) ?? 0) + 1);
      }
      const seqs = got.map((event) => event.seq);
      if (got.some((event) => event.type === 'sync.reset')) problems.push(`${client.label}: got sync.reset`);
      if (seqs.length !== head || seqs.some((seq, i) => seq !== i + 1)) {
        problems.push(
          `${client.label}: ${seqs.length} events for head ${head}: ${gapOf(seqs)}; ${connectionsOf(client)}`,
        );
        continue;
      }
      const differing = got.filter((event) => bySeq.get(event.seq) !== JSON.stringify(event));
      if (differing.length > 0)
        problems.push(
          `${client.label}: ${differing.length} events differ from the replay, first ${JSON.stringify(differing[0])}`,
        );
    }
  }
  const codes = [...closeCodes].map(([code, n]) => `${n}×${code}`).join(', ') || 'none';
  return {
    name: 'events',
    line:
      `events: ${clients} clients on ${load.allProjects().length} projects received ${events} events ` +
      `(the since=0 replays: ${replayed}); ${reconnections} reconnections with since= (closes: ${codes}); ` +
      `${problems.length === 0 ? 'every client has every event once, in seq order' : `${problems.length} clients with a gap, duplicate or difference`}`,
    problems,
    notes,
  };
}

/** Where a seq list first departs from 1, 2, 3, … */
function gapOf(seqs: number[]): string {
  const at = seqs.findIndex((seq, i) => seq !== i + 1);
  if (at < 0) return 'in order';
  return `at index ${at}: …${seqs.slice(Math.max(0, at - 3), at + 3).join(',')}…`;
}

function connectionsOf(client: EventsClient): string {
  return client.connections
    .map(
      (c) =>
        `${c.node}#${c.incarnation} since=${c.since} got ${c.events.length} [${c.events[0]?.seq ?? '-'}..${c.events.at(-1)?.seq ?? '-'}] close ${c.closeCode ?? 'open'}`,
    )
    .join(' | ');
}

/** What a request of the load should be answered with. */
function expectedStatus(record: RequestRecord): boolean {
  switch (record.op) {
    case 'submit image':
    case 'submit video':
      return record.status === 202 || record.status === 201;
    case 'create user':
    case 'create key':
      return record.status === 201;
    default:
      return record.status === 200;
  }
}

/**
 * Failures: a request of the load failed (no answer, or an answer other than its success) only on a connection
 * of a service node incarnation that was killed (in flight when the kill came), or as 503 (the service's
 * `unavailable` code; its body carries a message, spec §7.1) for a request sent within 10 s of a NATS node
 * going down. Failures on a gracefully stopped node's connections are allowed only for work still running when
 * its shutdown grace ended (CONTRACT §12: that ends as on a crashed node).
 */
export function checkFailures(load: ChaosLoad, options: { shutdownGraceMs: number }): Figure {
  const problems: string[] = [];
  const notes: string[] = [];
  const { requests, disruptions } = load.traffic;
  const mine = requests.filter((record) => record.actor !== 'check');
  const failed = mine.filter((record) => !expectedStatus(record));
  let onKilled = 0;
  let onStopped = 0;
  let natsUnavailable = 0;
  /** Per NATS outage: the 503s' send and answer times after the kill. */
  const outages = new Map<Disruption, { lastSent: number; lastAnswered: number; first: number }>();
  const nodeDisruption = (record: RequestRecord, kind: 'kill' | 'stop'): Disruption | undefined =>
    disruptions.find(
      (d) =>
        d.kind === kind &&
        d.target === record.node &&
        d.incarnation === record.incarnation &&
        record.endedAt >= d.at - 50,
    );
  for (const record of failed) {
    const killed = nodeDisruption(record, 'kill');
    if (killed) {
      onKilled++;
      notes.push(`on killed ${killed.target}: ${describe(record)}`);
      continue;
    }
    const natsDown = disruptions.find(
      (d) =>
        d.kind === 'nats-kill' &&
        record.endedAt >= d.at &&
        record.startedAt <= (d.backAt ?? Infinity) + NATS_UNAVAILABLE_LIMIT_MS,
    );
    if (record.status === 503 && natsDown) {
      natsUnavailable++;
      const outage = outages.get(natsDown) ?? { lastSent: 0, lastAnswered: 0, first: Infinity };
      outage.first = Math.min(outage.first, record.endedAt - natsDown.at);
      outage.lastSent = Math.max(outage.lastSent, record.startedAt - natsDown.at);
      outage.lastAnswered = Math.max(outage.lastAnswered, record.endedAt - natsDown.at);
      outages.set(natsDown, outage);
      if (record.startedAt - natsDown.at > NATS_UNAVAILABLE_LIMIT_MS)
        problems.push(
          `503 to a request sent ${record.startedAt - natsDown.at} ms after ${natsDown.target} went down: ${describe(record)}`,
        );
      else if (record.endedAt - natsDown.at > NATS_UNAVAILABLE_LIMIT_MS)
        notes.push(
          `503 answered ${record.endedAt - natsDown.at} ms after ${natsDown.target} went down (sent at ${record.startedAt - natsDown.at} ms): ${describe(record)}`,
        );
      continue;
    }
    const stopped = nodeDisruption(record, 'stop');
    if (stopped) {
      onStopped++;
      // What still runs when the grace is over ends as on a crashed node (CONTRACT §12): allowed then only.
      if (record.endedAt >= stopped.at + options.shutdownGraceMs - 500)
        notes.push(`cut at the end of the shutdown grace on ${stopped.target}: ${describe(record)}`);
      else problems.push(`failed on a gracefully stopped node within its grace: ${describe(record)}`);
      continue;
    }
    problems.push(`failed on a live node: ${describe(record)}`);
  }
  const ops = new Map<string, number>();
  for (const record of mine) ops.set(record.op, (ops.get(record.op) ?? 0) + 1);
  const mix = [...ops].map(([op, n]) => `${n} ${op}`).join(', ');
  const connections = new Set(mine.map((record) => record.connection).filter(Boolean)).size;
  const spans = [...outages]
    .map(
      ([d, o]) =>
        `${d.target} down ${(((d.backAt ?? d.at) - d.at) / 1000).toFixed(1)} s: 503s answered from +${o.first} to +${o.lastAnswered} ms after the kill, the last one sent at +${o.lastSent} ms`,
    )
    .join('; ');
  return {
    name: 'failures',
    line:
      `requests: ${mine.length} (${mix}) over ${connections} connections; ${failed.length} failed: ` +
      `${onKilled} on killed nodes' connections, ${natsUnavailable} 503 while a NATS node was down${spans ? ` (${spans})` : ''}, ` +
      `${onStopped} on gracefully stopped nodes, ${failed.length - onKilled - natsUnavailable - onStopped} elsewhere`,
    problems,
    notes,
  };
}

function describe(record: RequestRecord): string {
  const body =
    typeof record.body === 'string' ? record.body.slice(0, 160) : JSON.stringify(record.body)?.slice(0, 160);
  return `#${record.seq} ${record.actor} ${record.op} ${record.method} ${record.path} on ${record.node}#${record.incarnation} (${record.connection || 'no connection'}) ${new Date(record.startedAt).toISOString().slice(11, 23)}→${new Date(record.endedAt).toISOString().slice(11, 23)}: ${record.status ?? record.error} ${body ?? ''}`;
}

/** How long the load's turns, exports and job submissions took (answered 200/202), for the note. */
export function latencies(load: ChaosLoad): Figure {
  const parts: string[] = [];
  for (const op of ['instruct', 'export', 'submit image', 'grant']) {
    const times = load.traffic.requests
      .filter((r) => r.op === op && r.actor !== 'setup' && r.status !== null && r.status < 300)
      .map((r) => r.endedAt - r.startedAt)
      .sort((a, b) => a - b);
    if (times.length === 0) continue;
    const q = (f: number) => times[Math.min(times.length - 1, Math.floor(f * times.length))]!;
    parts.push(`${op} ${times.length}× p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${times.at(-1)} ms`);
  }
  return { name: 'latency', line: `latency: ${parts.join('; ')}`, problems: [] };
}

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

/** Prints the figures (a line each, then the problems and notes) and returns the problems of all. */
export function report(title: string, figures: Figure[]): string[] {
  const lines = [`---- ${title} ----`];
  for (const figure of figures) {
    lines.push(figure.line);
    for (const note of figure.notes ?? []) lines.push(`    note: ${note}`);
    for (const problem of figure.problems.slice(0, 15)) lines.push(`    PROBLEM: ${problem}`);
    if (figure.problems.length > 15) lines.push(`    … and ${figure.problems.length - 15} more`);
  }
  console.log(lines.join('\n'));
  return figures.flatMap((figure) => figure.problems.map((problem) => `${figure.name}: ${problem}`));
}
