// What every generation-jobs test does against a running service: make an account, submit, read the
// balance, wait for a job to leave `processing`, download a result file for ffprobe.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminClient, call, type RunningService } from './service.ts';

/** A job as `GET /api/v1/jobs/<id>` shows it. */
export interface Job {
  job_id: string;
  status: string;
  model: string;
  type: string;
  credits_consumed: number;
  refunded_credits: number;
  created_at: string;
  completed_at: string | null;
  result: { video?: string; images?: string[] } | null;
  error: string | null;
}

/** Job calls against `service` (its URL may change across restarts: pass a getter). */
export function jobsClient(service: () => Pick<RunningService, 'url' | 'adminToken'>) {
  let userNo = 0;
  const url = () => service().url;

  return {
    /** A new user with `credits` and a key with every generation scope. */
    async account(credits = 100_000, scopes = ['video:write', 'image:write']) {
      const admin = adminClient(service());
      const userId = await admin.createUser(`jobs${++userNo}-${Date.now()}@example.com`, credits);
      const key = await admin.createKey(userId, scopes);
      return { userId, token: key.apiKey };
    },

    balance: async (token: string) =>
      (await call<{ credits: number }>(url(), 'GET', '/api/v1/account', { token })).body.credits,

    submitVideo: (token: string, body: unknown) =>
      call<Record<string, unknown>>(url(), 'POST', '/api/v1/video/vidmodel-2/generate', { token, body }),
    submitImage: (token: string, body: unknown) =>
      call<Record<string, unknown>>(url(), 'POST', '/api/v1/image/nano-banana/generate', { token, body }),

    getJob: (token: string, jobId: string) => call<Job>(url(), 'GET', `/api/v1/jobs/${jobId}`, { token }),

    /** Polls the job until it leaves `processing`; fails the test after `limitMs`. */
    async waitForEnd(token: string, jobId: string, limitMs = 30_000): Promise<Job> {
      const deadline = Date.now() + limitMs;
      // Polls back off (100 ms doubling to 1.5 s) as a client should: the key's 60 requests a minute must last
      // a job that a busy machine makes slow.
      for (let pause = 100; ; pause = Math.min(1500, pause * 2)) {
        const answer = await call<Job>(url(), 'GET', `/api/v1/jobs/${jobId}`, { token });
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        if (answer.body.status !== 'processing') return answer.body;
        if (Date.now() > deadline) throw new Error(`job ${jobId} still processing after ${limitMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    },
  };
}

/** Downloads a media URL into a temporary file (for ffprobe) and returns its path. */
export async function download(mediaUrl: string): Promise<string> {
  const response = await fetch(mediaUrl);
  assert.equal(response.status, 200, mediaUrl);
  const dir = await mkdtemp(join(tmpdir(), 'mf-job-'));
  const path = join(dir, mediaUrl.split('/').at(-1)!);
  await writeFile(path, Buffer.from(await response.arrayBuffer()));
  return path;
}
