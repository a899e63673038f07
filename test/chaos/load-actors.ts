// One step of each actor of the chaos load, recording what the service acknowledged to it: job
// submissions, admin credit grants, agent turns, reads. ChaosLoad (chaos-load.ts) runs them in paced loops
// and keeps the counters that vary what each step sends.
import type { InstructAnswer } from '../helpers/editor.ts';
import { sleep } from '../helpers/wait.ts';
import type { LoadProject, LoadUser } from './load-setup.ts';
import type { ClusterTraffic, RequestRecord } from './traffic.ts';

/** A credit operation the service acknowledged to its caller. */
export interface AcknowledgedCredit {
  kind: 'job' | 'grant' | 'turn';
  userId: string;
  /** The ledger op_id when the caller knows it (grants: its own; turns: `turn:<turn_id>`). */
  opId?: string;
  jobId?: string;
  delta: number;
  /** The request that was acknowledged. */
  request: number;
}

/** A job the load learnt of (a submit's answer, a turn's media.started), with its user. */
export interface KnownJob {
  userId: string;
  token: string;
  acknowledged: boolean;
}

/** What an actor step needs of the load: where to send, and where to record what was acknowledged. */
export interface ActorRecords {
  readonly traffic: ClusterTraffic;
  readonly acknowledged: AcknowledgedCredit[];
  readonly jobs: Map<string, KnownJob>;
}

/** Job `n` of the load, as `user`: a 480p video when n % 7 = 0, else an image that fails when n % 5 = 0. */
export async function submitJob(load: ActorRecords, user: LoadUser, n: number): Promise<void> {
  const video = n % 7 === 0;
  const fail = !video && n % 5 === 0;
  const path = video ? '/api/v1/video/vidmodel-2/generate' : '/api/v1/image/nano-banana/generate';
  const body = video
    ? { prompt: `chaos video ${n}`, duration_seconds: 4, resolution: '480p', generate_audio: false }
    : { prompt: `chaos image ${n}${fail ? ' [sandbox:fail]' : ''}` };
  const answer = await load.traffic.send({
    actor: user.label,
    op: video ? 'submit video' : 'submit image',
    method: 'POST',
    path,
    token: user.token,
    body,
  });
  if ((answer.status === 201 || answer.status === 202) && answer.body?.job_id) {
    const jobId = answer.body.job_id as string;
    load.jobs.set(jobId, { userId: user.userId, token: user.token, acknowledged: true });
    load.acknowledged.push({
      kind: 'job',
      userId: user.userId,
      jobId,
      delta: -(answer.body.credits_consumed as number),
      request: answer.seq,
    });
  }
}

/** A credit grant under `opId`, sent again with the SAME op_id to other nodes until acknowledged. */
export async function grantCredits(
  load: ActorRecords,
  user: LoadUser,
  opId: string,
  amount: number,
): Promise<void> {
  // The same op_id again, to other nodes, until acknowledged: it must apply once.
  let exclude: string | undefined;
  for (let attempt = 0; attempt < 20; attempt++) {
    const node = load.traffic.pick(exclude);
    const answer = await load.traffic.send({
      actor: 'grants',
      op: attempt === 0 ? 'grant' : 'grant (same op_id again)',
      method: 'POST',
      path: `/api/admin/v1/users/${user.userId}/credits`,
      token: load.traffic.cluster.adminToken,
      body: { amount, reason: 'chaos grant', op_id: opId },
      node,
    });
    if (answer.status === 200) {
      load.acknowledged.push({
        kind: 'grant',
        userId: user.userId,
        opId,
        delta: amount,
        request: answer.seq,
      });
      return;
    }
    exclude = node;
    await sleep(200);
  }
}

/** One agent turn, to `node` (default: the next live one); what it charged is recorded when answered 200. */
export async function instructTurn(
  load: ActorRecords,
  project: LoadProject,
  instruction: string,
  actor: string,
  node?: string,
): Promise<RequestRecord> {
  const answer = await load.traffic.send({
    actor,
    op: 'instruct',
    method: 'POST',
    path: `/api/v1/media-studio/projects/${project.id}/instruct`,
    token: project.user.token,
    body: { instruction },
    timeoutMs: 180_000,
    ...(node ? { node } : {}),
  });
  if (answer.status === 200) {
    const body = answer.body as InstructAnswer;
    const started = body.agent_events.find((event) => event.type === 'turn.started');
    if (started?.turn_id) {
      project.turns.push(started.turn_id);
      load.acknowledged.push({
        kind: 'turn',
        userId: project.user.userId,
        opId: `turn:${started.turn_id}`,
        delta: -5,
        request: answer.seq,
      });
    }
    for (const media of body.agent_events.filter((event) => event.type === 'media.started')) {
      const jobId = media.data.job_id as string;
      load.jobs.set(jobId, { userId: project.user.userId, token: project.user.token, acknowledged: true });
      load.acknowledged.push({
        kind: 'job',
        userId: project.user.userId,
        jobId,
        delta: -(media.data.credits as number),
        request: answer.seq,
      });
    }
  }
  return answer;
}

/** A read as `user`: one of its last three jobs (by `readNo`), or its account while it has none. */
export async function readAs(load: ActorRecords, user: LoadUser, readNo: number): Promise<void> {
  const jobIds = [...load.jobs.entries()].filter(([, job]) => job.userId === user.userId);
  const job = jobIds.at(-1 - (readNo % 3));
  await load.traffic.send({
    actor: 'reads',
    op: job ? 'get job' : 'get account',
    method: 'GET',
    path: job ? `/api/v1/jobs/${job[0]}` : '/api/v1/account',
    token: user.token,
  });
}
