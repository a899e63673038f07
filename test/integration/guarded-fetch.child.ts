// Runs guarded fetches for guarded-fetch.test.ts in a process started with NODE_EXTRA_CA_CERTS (which Node
// reads only at start-up). One JSON request per stdin line, one JSON answer per stdout line.
import { createInterface } from 'node:readline';
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { createGuardedFetch, type GuardedFetchOptions } from '../../src/platform/net/guarded-fetch.ts';
import { FetchRefused } from '../../src/platform/net/fetch-refused.ts';
import { type TargetPolicy } from '../../src/platform/net/checked-target.ts';

/** One fetch to run; `publicAddresses` / `hosts` replace the address policy / DNS when present. */
export interface ChildRequest {
  id: number;
  op: 'get' | 'post';
  url: string;
  options: GuardedFetchOptions;
  body?: string;
  headers?: Record<string, string>;
  publicAddresses?: string[];
  hosts?: Record<string, string[]>;
}

/** A fetch's outcome as the parent sees it (GET data in base64). */
export type ChildAnswer =
  | {
      id: number;
      ok: true;
      status: number;
      contentType?: string;
      data?: string;
      finalUrl?: string;
      body?: string;
    }
  | { id: number; ok: false; name: string; reason?: string; message: string; elapsedMs: number };

async function run(request: ChildRequest): Promise<ChildAnswer> {
  const overrides: Partial<TargetPolicy> = {};
  const publicAddresses = request.publicAddresses;
  if (publicAddresses) overrides.isPublic = (ip) => publicAddresses.includes(ip);
  const hosts = request.hosts;
  if (hosts)
    overrides.resolve = async (name): Promise<LookupAddress[]> =>
      (hosts[name] ?? []).map((address) => ({ address, family: isIP(address) }));
  const client = createGuardedFetch(overrides);
  const started = Date.now();
  try {
    if (request.op === 'post') {
      const answer = await client.post(
        request.url,
        request.body ?? '',
        request.headers ?? {},
        request.options,
      );
      return { id: request.id, ok: true, ...answer };
    }
    const answer = await client.get(request.url, request.options);
    return { id: request.id, ok: true, ...answer, data: answer.data.toString('base64') };
  } catch (error) {
    const failure = error as Error;
    const reason = error instanceof FetchRefused ? error.reason : undefined;
    const elapsedMs = Date.now() - started;
    return { id: request.id, ok: false, name: failure.name, reason, message: failure.message, elapsedMs };
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  void run(JSON.parse(line) as ChildRequest).then((answer) =>
    process.stdout.write(`${JSON.stringify(answer)}\n`),
  );
}
