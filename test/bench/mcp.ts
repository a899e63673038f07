// The MCP endpoint (docs/mcp.md, `/api/mcp`): what a tool call costs beyond the REST call it mirrors, and what
// open sessions with their event streams cost the node. The service runs from dist/ as users run it (a fresh
// jongodb, the rate limit far above the load, the audit to its file sink).
//
// 1. Overhead: one key, one initialized MCP session, one request at a time (far below saturation): `tools/call
//    list_models` (POST /api/mcp, `Accept: application/json, text/event-stream`, the SSE answer read whole)
//    against `GET /api/v1/models` with the same key. Both are plain keep-alive fetches with pre-built bodies
//    and headers, so the client's cost is small and the same on both sides. The machine is a shared 2-core VM
//    whose speed drifts, so ROUNDS rounds of REQUESTS requests rotate (each kind goes first in turn), after a
//    warm-up; judged: the difference of the pooled p50s (the median of the per-round p50 differences is
//    printed beside it). Two diagnostics run in the same rotation to place the overhead: `ping` (session read,
//    the per-request SDK server and its SSE answer, no tool) and a POST without Mcp-Session-Id (the front's
//    POST path and the endpoint's 400: no session, no SDK).
// 2. Held sessions, on a fresh node (so part 1's garbage is not in its RSS), after a small warm-up: SESSIONS
//    sessions (initialize + notifications/initialized, each its own Mcp-Session-Id, over 4 keys), each with
//    its GET event stream open at once for HOLD_S seconds while `tools/call get_account` goes through every
//    session in turn (CALL_CONCURRENCY at a time). The streams are raw TCP connections: the service does not
//    finish an event stream's HTTP head before its first event, so fetch would never resolve (counted as a
//    failure, see openStream). The service's RSS (VmRSS) before, with the sessions, with the streams and after
//    the calls (garbage included: the node collects when it will). Every failure is counted (must be 0): a
//    non-2xx answer, a tool error, a stream ended while held, a stream without its whole head. Then every
//    session is DELETEd (its stream must end), and the service must still answer REST and MCP, and a deleted
//    session 404.
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { startMongo } from '../helpers/mongo.ts';
import { startService, call, type RunningService } from '../helpers/service.ts';
import { editorUser } from '../helpers/editor.ts';
import { load1, percentile, verdict } from '../helpers/bench.ts';

const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS ?? 20);
const REQUESTS = Number(process.env.BENCH_MCP_REQUESTS ?? 100);
const WARMUP = 400;
const SESSIONS = Number(process.env.BENCH_MCP_SESSIONS ?? 200);
const HOLD_S = Number(process.env.BENCH_MCP_HOLD_S ?? 10);
const CALL_CONCURRENCY = 4;
const OVERHEAD_P50_MS = 2;
const PROTOCOL = '2025-06-18';

const progress = (what: string) => {
  if (process.env.BENCH_MCP_VERBOSE) console.error(`${new Date().toISOString()} ${what}`);
};
const ms = (value: number) => value.toFixed(2);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** A JSON-RPC message for `/api/mcp`, pre-serialised. */
const rpc = (id: number | undefined, method: string, params: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: '2.0', ...(id === undefined ? {} : { id }), method, params });

function mcpHeaders(token: string, session?: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    authorization: `Bearer ${token}`,
    ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL } : {}),
  };
}

/** A new session: initialize, then notifications/initialized. Throws unless both are accepted. */
async function openSession(url: string, token: string, name: string): Promise<string> {
  const init = await fetch(`${url}/api/mcp`, {
    method: 'POST',
    headers: mcpHeaders(token),
    body: rpc(0, 'initialize', {
      protocolVersion: PROTOCOL,
      capabilities: {},
      clientInfo: { name, version: '1' },
    }),
  });
  const text = await init.text();
  const session = init.headers.get('mcp-session-id');
  if (init.status !== 200 || !session || !text.includes('"result"'))
    throw new Error(`initialize: ${init.status} ${text}`);
  const note = await fetch(`${url}/api/mcp`, {
    method: 'POST',
    headers: mcpHeaders(token, session),
    body: rpc(undefined, 'notifications/initialized'),
  });
  await note.text();
  if (note.status !== 202) throw new Error(`notifications/initialized: ${note.status}`);
  return session;
}

/** A tool call's whole answer (SSE or JSON), and whether it is a result that is not a tool error. */
async function toolCall(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ ok: boolean; text: string }> {
  const response = await fetch(`${url}/api/mcp`, { method: 'POST', headers, body });
  const text = await response.text();
  const ok =
    response.status === 200 &&
    text.includes('"structuredContent"') &&
    !text.includes('"isError":true') &&
    !text.includes('"error"');
  return { ok, text: `${response.status} ${text.slice(0, 300)}` };
}

// ---- 1. overhead ----

interface Side {
  all: number[];
  roundP50: number[];
  failures: number;
}

async function overhead(service: RunningService, token: string) {
  const session = await openSession(service.url, token, 'bench-overhead');
  const mcpHead = mcpHeaders(token, session);
  const mcpBody = rpc(1, 'tools/call', { name: 'list_models', arguments: {} });
  const restHead = { authorization: `Bearer ${token}` };
  const restUrl = `${service.url}/api/v1/models`;
  const first = await toolCall(service.url, mcpHead, mcpBody);
  if (!first.ok) throw new Error(`list_models: ${first.text}`);
  const mcpOnce = async () => (await toolCall(service.url, mcpHead, mcpBody)).ok;
  const restOnce = async () => {
    const response = await fetch(restUrl, { headers: restHead });
    const text = await response.text();
    return response.status === 200 && text.startsWith('{"models"');
  };
  // Diagnostics, in the same rotation, to place the overhead: `ping` (the per-request SDK server and the SSE
  // answer, no tool) and a POST without Mcp-Session-Id (the front's POST path — auth, body, audit — and the
  // endpoint's 400, no session read, no SDK).
  const pingBody = rpc(2, 'ping');
  const pingOnce = async () => {
    const response = await fetch(`${service.url}/api/mcp`, {
      method: 'POST',
      headers: mcpHead,
      body: pingBody,
    });
    const text = await response.text();
    return response.status === 200 && text.includes('"result":{}');
  };
  const bareHead = mcpHeaders(token);
  const rejectOnce = async () => {
    const response = await fetch(`${service.url}/api/mcp`, {
      method: 'POST',
      headers: bareHead,
      body: pingBody,
    });
    await response.text();
    return response.status === 400;
  };
  const kinds = { mcp: mcpOnce, rest: restOnce, ping: pingOnce, reject: rejectOnce };
  type Kind = keyof typeof kinds;
  const names = Object.keys(kinds) as Kind[];
  const sides = Object.fromEntries(
    names.map((name): [Kind, Side] => [name, { all: [], roundP50: [], failures: 0 }]),
  ) as Record<Kind, Side>;
  const run = async (side: Side | undefined, once: () => Promise<boolean>, count: number) => {
    const times: number[] = [];
    for (let i = 0; i < count; i++) {
      const start = performance.now();
      const ok = await once();
      times.push(performance.now() - start);
      if (!ok && side) side.failures++;
    }
    if (side) {
      side.all.push(...times);
      side.roundP50.push(percentile(sorted(times), 0.5));
    }
  };
  for (let i = 0; i < 2; i++) for (const name of names) await run(undefined, kinds[name], WARMUP / 4);
  const servicePid = service.proc.child.pid!;
  const cpuStart = cpuMs(servicePid);
  const wallStart = performance.now();
  for (let round = 0; round < ROUNDS; round++) {
    // Each kind goes first in turn, and the order reverses every other round.
    const order = [...names.slice(round % names.length), ...names.slice(0, round % names.length)];
    if (round % 2 === 1) order.reverse();
    for (const name of order) await run(sides[name], kinds[name], REQUESTS);
  }
  const serviceCpuShare = (cpuMs(servicePid) - cpuStart) / (performance.now() - wallStart);
  const stats = (side: Side) => {
    const all = sorted(side.all);
    return { p50: percentile(all, 0.5), p99: percentile(all, 0.99), failures: side.failures };
  };
  const mcp = stats(sides.mcp);
  const rest = stats(sides.rest);
  const ping = stats(sides.ping);
  const reject = stats(sides.reject);
  const diff = mcp.p50 - rest.p50;
  const roundDiff = median(sides.mcp.roundP50.map((p50, i) => p50 - sides.rest.roundP50[i]!));
  const pass = diff <= OVERHEAD_P50_MS && mcp.failures + rest.failures === 0;
  const line = (label: string, f: ReturnType<typeof stats>) =>
    `  ${label.padEnd(44)} p50 ${ms(f.p50)} p99 ${ms(f.p99)} ms  failures ${f.failures}\n`;
  console.log(
    `mcp overhead (${ROUNDS}×${REQUESTS} alternating, one at a time, load ${load1()}, service CPU ` +
      `${(serviceCpuShare * 100).toFixed(0)} % of a core):\n` +
      line('tools/call list_models (SSE)', mcp) +
      line('GET /api/v1/models', rest) +
      line('diagnostic: ping (SDK server + SSE, no tool)', ping) +
      line('diagnostic: POST without session (400)', reject) +
      `  difference of p50s ${ms(diff)} ms, median of per-round p50 differences ${ms(roundDiff)} ms ` +
      `(rounds ${sides.mcp.roundP50.map((p, i) => ms(p - sides.rest.roundP50[i]!)).join(' ')}) ` +
      `[budget: p50 ≤ ${OVERHEAD_P50_MS} ms: ` +
      `${verdict(pass, `tools/call p50 <= GET p50 + ${OVERHEAD_P50_MS} ms, no failure`, `+${ms(diff)} ms, ${mcp.failures + rest.failures} failures`)}]`,
  );
  await fetch(`${service.url}/api/mcp`, { method: 'DELETE', headers: mcpHead }).then((r) => r.text());
  return pass;
}

const TICK_MS = 10; // CLK_TCK is 100 on Linux
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

// ---- 2. held sessions ----

interface Held {
  session: string;
  token: string;
  socket: Socket;
  /** The answer's head arrived whole (its blank line): only then can an HTTP client (fetch, the SDK) use it. */
  headComplete: boolean;
  /** Resolves when the service ends the answer (its last chunk) or the connection. */
  ended: Promise<void>;
  endedAt?: number;
}

/**
 * A GET event stream on a raw TCP connection: fetch (and the SDK's Client) wait for the whole head, and this
 * service sends an event stream's head without its end until the first event (see the report), so a stream
 * counts as open once its status line `200` arrived; whether the head was whole by then is recorded.
 */
function openStream(url: string, token: string, session: string): Promise<Held> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    let entry: Held | undefined;
    let markEnded!: () => void;
    const ended = new Promise<void>((done) => (markEnded = done));
    const end = () => {
      if (entry && entry.endedAt === undefined) entry.endedAt = performance.now();
      markEnded();
    };
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to GET in 10 s: ${JSON.stringify(received)}`));
    }, 10_000);
    socket.setEncoding('latin1');
    socket.on('connect', () =>
      socket.write(
        `GET /api/mcp HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n` +
          `Authorization: Bearer ${token}\r\nMcp-Session-Id: ${session}\r\n` +
          `Mcp-Protocol-Version: ${PROTOCOL}\r\n\r\n`,
      ),
    );
    socket.on('data', (chunk: string) => {
      received += chunk;
      if (!entry && /^HTTP\/1\.1 \d{3}/.test(received)) {
        clearTimeout(timer);
        if (!received.startsWith('HTTP/1.1 200')) {
          socket.destroy();
          reject(new Error(`GET: ${received.slice(0, 200)}`));
          return;
        }
        // The head's blank line, as the service sends it within a moment.
        setTimeout(() => {
          entry = { session, token, socket, headComplete: received.includes('\r\n\r\n'), ended };
          resolve(entry);
        }, 200);
      }
      if (/\r\n0\r\n\r\n$/.test(received) || /content-length: 0\r\n\r\n$/i.test(received)) end();
    });
    socket.on('close', end);
    socket.on('error', () => undefined);
  });
}

/** Runs `work` over `items`, `concurrency` at a time. */
async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

async function heldSessions(service: RunningService, tokens: string[]) {
  const pid = service.proc.child.pid!;
  const failures: string[] = [];
  const fail = (what: string) => {
    if (failures.length < 5) console.log(`  failure: ${what}`);
    failures.push(what);
  };
  // Warm-up (code loaded and compiled, pools grown): a few sessions with a stream and calls, then ended.
  const body = rpc(7, 'tools/call', { name: 'get_account', arguments: {} });
  for (let i = 0; i < 10; i++) {
    const token = tokens[i % tokens.length]!;
    const session = await openSession(service.url, token, `warm-${i}`);
    const stream = await openStream(service.url, token, session);
    for (let j = 0; j < 20; j++) await toolCall(service.url, mcpHeaders(token, session), body);
    await fetch(`${service.url}/api/mcp`, { method: 'DELETE', headers: mcpHeaders(token, session) });
    stream.socket.destroy();
  }
  await delay(2000);
  const rssBefore = rssMb(pid);

  // Open the sessions, then their event streams.
  const sessions: { session: string; token: string }[] = [];
  const opening = performance.now();
  await pool(
    Array.from({ length: SESSIONS }, (_, i) => i),
    10,
    async (i) => {
      const token = tokens[i % tokens.length]!;
      try {
        sessions.push({ session: await openSession(service.url, token, `bench-${i}`), token });
      } catch (error) {
        fail(`open ${i}: ${(error as Error).message}`);
      }
    },
  );
  const openedMs = performance.now() - opening;
  progress(`opened ${sessions.length}`);
  await delay(500);
  const rssSessions = rssMb(pid);
  const held: Held[] = [];
  let incompleteHeads = 0;
  await pool(sessions, 10, async ({ session, token }) => {
    try {
      const entry = await openStream(service.url, token, session);
      if (!entry.headComplete) incompleteHeads++;
      held.push(entry);
    } catch (error) {
      fail(`GET stream: ${(error as Error).message}`);
    }
  });
  progress(`streams ${held.length}`);
  await delay(1000);
  const rssStreams = rssMb(pid);

  // Calls through every session while the streams stay open.
  const latencies: number[] = [];
  const holdStart = performance.now();
  const heads = new Map(held.map((h) => [h.session, mcpHeaders(h.token, h.session)]));
  let cursor = 0;
  await Promise.all(
    Array.from({ length: CALL_CONCURRENCY }, async () => {
      while (performance.now() - holdStart < HOLD_S * 1000 || cursor < held.length) {
        const entry = held[cursor++ % held.length]!;
        const start = performance.now();
        const answer = await toolCall(service.url, heads.get(entry.session)!, body);
        latencies.push(performance.now() - start);
        if (!answer.ok) fail(`get_account: ${answer.text}`);
      }
    }),
  );
  const heldMs = performance.now() - holdStart;
  progress(`calls ${latencies.length}`);
  const rssCalls = rssMb(pid);
  const earlyEnds = held.filter((h) => h.endedAt !== undefined).length;
  if (earlyEnds > 0) fail(`${earlyEnds} event streams ended while held`);
  if (incompleteHeads > 0)
    fail(`${incompleteHeads} event streams without a whole HTTP head (fetch never resolves)`);

  // End every session: its stream must end too.
  const closing = performance.now();
  await pool(held, 10, async (entry) => {
    const response = await fetch(`${service.url}/api/mcp`, {
      method: 'DELETE',
      headers: mcpHeaders(entry.token, entry.session),
    });
    await response.text();
    if (response.status !== 200) fail(`DELETE: ${response.status}`);
  });
  await Promise.race([Promise.all(held.map((h) => h.ended)), delay(5000)]);
  const streamsEnded = held.filter((h) => h.endedAt !== undefined).length;
  const closedMs = performance.now() - closing;
  progress(`closed ${streamsEnded}`);
  if (streamsEnded !== held.length) fail(`${held.length - streamsEnded} streams still open after DELETE`);
  for (const entry of held) entry.socket.destroy();
  await delay(1000);
  const rssClosed = rssMb(pid);

  // Still answering: REST, a new session and a call, and a deleted session is gone.
  const models = await call(service.url, 'GET', '/api/v1/models', { token: tokens[0] });
  if (models.status !== 200) fail(`GET /api/v1/models after: ${models.status}`);
  const fresh = await openSession(service.url, tokens[0]!, 'bench-after');
  const after = await toolCall(service.url, mcpHeaders(tokens[0]!, fresh), body);
  if (!after.ok) fail(`get_account after: ${after.text}`);
  if (held[0]) {
    const gone = await fetch(`${service.url}/api/mcp`, {
      method: 'POST',
      headers: mcpHeaders(held[0].token, held[0].session),
      body,
    });
    await gone.text();
    if (gone.status !== 404) fail(`a deleted session answered ${gone.status}, not 404`);
  }
  await fetch(`${service.url}/api/mcp`, { method: 'DELETE', headers: mcpHeaders(tokens[0]!, fresh) });

  const lat = sorted(latencies);
  const perSessionKb = ((rssStreams - rssBefore) * 1024) / SESSIONS;
  const perSessionOnlyKb = ((rssSessions - rssBefore) * 1024) / SESSIONS;
  const perStreamKb = ((rssStreams - rssSessions) * 1024) / SESSIONS;
  const pass = failures.length === 0 && held.length === SESSIONS;
  console.log(
    `mcp held sessions (${SESSIONS} sessions over ${tokens.length} keys, load ${load1()}):\n` +
      `  opened ${sessions.length} sessions in ${(openedMs / 1000).toFixed(1)} s, ${held.length} event streams ` +
      `held ${(heldMs / 1000).toFixed(1)} s (a whole HTTP head on ${held.length - incompleteHeads})\n` +
      `  RSS before ${rssBefore.toFixed(1)} MB, sessions open ${rssSessions.toFixed(1)} MB, streams open ` +
      `${rssStreams.toFixed(1)} MB, after the calls ${rssCalls.toFixed(1)} MB, after DELETE ${rssClosed.toFixed(1)} MB; ` +
      `per session + stream ${perSessionKb.toFixed(0)} KB (session ${perSessionOnlyKb.toFixed(0)}, its stream ` +
      `${perStreamKb.toFixed(0)}; garbage included: the service's GC runs when it will)\n` +
      `  get_account during the hold: ${lat.length} calls (${CALL_CONCURRENCY} at a time), p50 ${ms(percentile(lat, 0.5))} ` +
      `p99 ${ms(percentile(lat, 0.99))} max ${ms(lat.at(-1)!)} ms\n` +
      `  DELETE ×${held.length}: ${streamsEnded} streams ended by the service within ${(closedMs / 1000).toFixed(1)} s; ` +
      `service answers after: ${models.status === 200 && after.ok ? 'yes' : 'NO'}\n` +
      `  failures ${failures.length} [must be 0: ` +
      `${verdict(pass, `${SESSIONS} held sessions without a failure`, `${failures.length} failures, ${held.length} streams held`)}]`,
  );
  return pass;
}

const mongo = await startMongo();
const serve = () =>
  startService({
    MONGO_URL: mongo.uri,
    AUDIT_SINK: 'file',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    LOG_LEVEL: 'warn',
  });
const keysOf = async (service: RunningService, count: number) =>
  (
    await Promise.all(
      Array.from({ length: count }, () => editorUser(service, { credits: 1000, scopes: ['models:read'] })),
    )
  ).map((key) => key.token);
let ok: boolean;
try {
  let first = true;
  if (!process.env.BENCH_MCP_SKIP_OVERHEAD) {
    const service = await serve();
    try {
      first = await overhead(service, (await keysOf(service, 1))[0]!);
    } finally {
      await service.stop();
    }
  }
  // A fresh node, so the RSS figures are not the garbage of part 1.
  const service = await serve();
  try {
    ok = (await heldSessions(service, await keysOf(service, 4))) && first;
  } finally {
    await service.stop();
  }
} finally {
  await mongo.stop();
}
process.exit(ok ? 0 : 1);
