// Requests per second of GET /api/v1/models through the whole pipeline (auth, scope, rate limit, audit to the
// file sink) against a bare uWebSockets.js handler returning the same JSON, with the same load generator.
// Two phases per server: saturation (50 connections as fast as they go: throughput, and latency that is
// mostly queueing — Little's law), then a fixed offered rate of a quarter of the bare handler's throughput
// (50 connections: latency of the pipeline itself).
import autocannon from 'autocannon';
import { fileURLToPath } from 'node:url';
import { startMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient } from '../helpers/service.ts';
import { watchProcess, stopProcess } from '../helpers/processes.ts';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10);
const CONNECTIONS = 50;

async function load(url: string, apiKey: string | undefined, overallRate?: number) {
  const options = {
    url: `${url}/api/v1/models`,
    connections: CONNECTIONS,
    headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
    ...(overallRate ? { overallRate } : {}),
  };
  await autocannon({ ...options, duration: 2 }); // warm-up: JIT, caches, connection set-up
  const result = await autocannon({ ...options, duration: DURATION_S });
  const ok = result['2xx'];
  return { rps: ok / DURATION_S, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx };
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
    const baseline = await load(bareUrl, undefined);
    const full = await load(service.url, apiKey);
    const rate = Math.round(baseline.rps / 4);
    const bareAtRate = await load(bareUrl, undefined, rate);
    const fullAtRate = await load(service.url, apiKey, rate);
    const ratio = full.rps / baseline.rps;
    const verdict =
      ratio >= 0.5 && fullAtRate.p99 <= 5 && full.non2xx === 0 ? 'within budget' : 'OVER BUDGET';
    console.log(
      `http-front: saturation: pipeline ${full.rps.toFixed(0)} req/s (p50 ${full.p50} ms, p99 ${full.p99} ms, ` +
        `non-2xx ${full.non2xx}) vs bare uWebSockets.js ${baseline.rps.toFixed(0)} req/s (p50 ${baseline.p50} ms, ` +
        `p99 ${baseline.p99} ms): ratio ${(ratio * 100).toFixed(1)} %; at ${rate} req/s offered: pipeline p50 ` +
        `${fullAtRate.p50} ms p99 ${fullAtRate.p99} ms vs bare p50 ${bareAtRate.p50} ms p99 ${bareAtRate.p99} ms ` +
        `[budget: ratio >= 50 %, p99 <= 5 ms: ${verdict}]`,
    );
  } finally {
    await stopProcess(bare);
  }
} finally {
  await service.stop();
  await mongo.stop();
}
