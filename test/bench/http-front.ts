// GET /api/v1/models through the whole pipeline (auth, scope, rate limit far above the load, audit to the file
// sink) against a bare uWebSockets.js handler returning the same JSON: same load generator, 50 connections,
// one run. The machine is a shared 2-core VM whose speed drifts between seconds, so bare and pipeline rounds
// alternate and the medians are compared. The budget is judged with autocannon; when wrk
// (C) is installed it runs too and is reported beside it: it costs the servers far less CPU, so the bare
// handler goes much faster and the ratio is stricter.
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient } from '../helpers/service.ts';
import { watchProcess, stopProcess } from '../helpers/processes.ts';
import { verdict } from '../helpers/bench.ts';

const ROUND_S = Number(process.env.BENCH_ROUND_S ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 50;

interface Round {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
}

const hasWrk = (() => {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (error) {
    return (error as { status?: number }).status === 1; // wrk --version exits 1 after printing its version
  }
})();

type Generator = 'autocannon' | 'wrk';

/** One round of load; only 2xx answers count. */
async function round(
  generator: Generator,
  url: string,
  apiKey: string | undefined,
  seconds: number,
): Promise<Round> {
  const target = `${url}/api/v1/models`;
  const header = apiKey ? [`Authorization: Bearer ${apiKey}`] : [];
  if (generator === 'wrk') {
    const out = execFileSync('wrk', [
      '-t1',
      `-c${CONNECTIONS}`,
      `-d${seconds}s`,
      '--latency',
      ...header.flatMap((h) => ['-H', h]),
      target,
    ]).toString();
    const ms = (label: string) => {
      const [, value, unit] = new RegExp(`${label}\\s+([\\d.]+)(us|ms|s)`).exec(out) ?? [];
      return Number(value) * (unit === 'us' ? 0.001 : unit === 's' ? 1000 : 1);
    };
    const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
    const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
    return { rps: (requests - non2xx) / seconds, p50: ms('50%'), p99: ms('99%'), non2xx };
  }
  const result = await autocannon({
    url: target,
    connections: CONNECTIONS,
    duration: seconds,
    headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
  });
  return {
    rps: result['2xx'] / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

function report(generator: Generator, bareRounds: Round[], fullRounds: Round[]): void {
  const ratio = median(fullRounds.map((r, i) => r.rps / bareRounds[i]!.rps));
  const p99 = median(fullRounds.map((r) => r.p99));
  const non2xx = fullRounds.reduce((sum, r) => sum + r.non2xx, 0);
  const judged =
    generator === 'autocannon'
      ? `[budget: ratio >= 50 %, p99 <= 5 ms: ${verdict(
          ratio >= 0.5 && p99 <= 5 && non2xx === 0,
          'pipeline >= 50 % of bare req/s, p99 <= 5 ms, all 2xx (autocannon)',
          `${(ratio * 100).toFixed(1)} %, p99 ${p99.toFixed(2)} ms, ${non2xx} non-2xx`,
        )}]`
      : '[reported beside the budget]';
  const fmt = (rounds: Round[]) => rounds.map((r) => `${r.rps.toFixed(0)}/${r.p99.toFixed(2)}`).join(' ');
  console.log(
    `http-front (${generator}, ${CONNECTIONS} connections, ${ROUNDS}×${ROUND_S} s alternating): ` +
      `pipeline median ${median(fullRounds.map((r) => r.rps)).toFixed(0)} req/s p50 ` +
      `${median(fullRounds.map((r) => r.p50)).toFixed(2)} ms p99 ${p99.toFixed(2)} ms, non-2xx ${non2xx}; ` +
      `bare uWebSockets.js median ${median(bareRounds.map((r) => r.rps)).toFixed(0)} req/s p99 ` +
      `${median(bareRounds.map((r) => r.p99)).toFixed(2)} ms; ratio median ${(ratio * 100).toFixed(1)} % ` +
      `(rounds req/s/p99 ms — pipeline: ${fmt(fullRounds)}; bare: ${fmt(bareRounds)}) ${judged}`,
  );
}

const mongo = await startMongo();
const service = await startService({
  MONGO_URL: mongo.uri,
  AUDIT_SINK: 'file',
  RATE_LIMIT_PER_MINUTE: '1000000000',
  LOG_LEVEL: 'warn',
});
try {
  const admin = adminClient(service);
  const { apiKey } = await admin.createKey(await admin.createUser('bench@example.com'));
  const models = await call(service.url, 'GET', '/api/v1/models', { token: apiKey });
  const bare = watchProcess(process.execPath, [
    '--import',
    'tsx',
    fileURLToPath(new URL('./bare-uws-server.ts', import.meta.url)),
    JSON.stringify(models.body),
  ]);
  const bareUrl = (await bare.waitForLine(/listening on (\S+)/))[1]!;
  try {
    for (const generator of ['autocannon', ...(hasWrk ? ['wrk'] : [])] as Generator[]) {
      await round(generator, bareUrl, undefined, 2); // warm-up: JIT, caches, connection set-up
      await round(generator, service.url, apiKey, 2);
      const bareRounds: Round[] = [];
      const fullRounds: Round[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        bareRounds.push(await round(generator, bareUrl, undefined, ROUND_S));
        fullRounds.push(await round(generator, service.url, apiKey, ROUND_S));
      }
      report(generator, bareRounds, fullRounds);
    }
  } finally {
    await stopProcess(bare);
  }
} finally {
  await service.stop();
  await mongo.stop();
}
