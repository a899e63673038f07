// Start-up of the JetStream actor transport with 2 kinds × 64 partitions (128 durable consumers) against a fresh
// nats-server per run: "fresh" creates the stream and every consumer; "again" is a second node starting on the
// same server (every consumer exists: each is checked, and pulled from). Measured when the partitions started
// concurrently (11 runs alternating with the previous code, 2 cores, load ~7): fresh 458 → 394 ms, again 167 →
// 114 ms (medians). Fresh start-up is bound by nats-server 2.9, which creates consumers one at a time (~2.7 ms
// each here, whether asked one after another or all at once).
import pino from 'pino';
import { connect } from '@nats-io/transport-node';
import { createJetStreamTransport } from '../../src/platform/nats/actor-transport.ts';
import { startNats } from '../helpers/nats.ts';
import { load1 } from '../helpers/bench.ts';

const RUNS = Number(process.env.BENCH_ACTOR_STARTUP_RUNS ?? 5);
const PARTITIONS = 64;
const KINDS = ['alpha', 'beta'].map((kind) => ({ kind, ackWaitMs: 30_000 }));
const logger = pino({ level: 'silent' });
const dispatch = async () => ({ ok: true as const, value: null });

async function startOnce(url: string): Promise<number> {
  const connection = await connect({ servers: url });
  const transport = createJetStreamTransport({ connection, partitions: PARTITIONS, replicas: 1, logger });
  const started = performance.now();
  await transport.start(KINDS, dispatch);
  const ms = performance.now() - started;
  await transport.close();
  await connection.drain();
  return ms;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const figures = (values: number[]) =>
  `median ${median(values).toFixed(0)} ms (min ${Math.min(...values).toFixed(0)}, max ${Math.max(...values).toFixed(0)})`;
const fresh: number[] = [];
const again: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const nats = await startNats();
  try {
    fresh.push(await startOnce(nats.url));
    again.push(await startOnce(nats.url));
  } finally {
    await nats.stop();
  }
}
console.log(
  `actor start-up (JetStream, ${KINDS.length} kinds × ${PARTITIONS} partitions, ${RUNS} runs, fresh nats-server each): ` +
    `fresh ${figures(fresh)}; again ${figures(again)} [load ${load1()}]`,
);
