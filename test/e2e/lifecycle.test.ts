import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, serveArgs, serviceEnv, TEST_ADMIN_TOKEN } from '../helpers/service.ts';
import { watchProcess } from '../helpers/processes.ts';
import { editorClient, editorUser } from '../helpers/editor.ts';
import { openEventsSocket } from '../helpers/events-socket.ts';

/** Runs `mediaforge serve` with a configuration expected to be refused; resolves with its exit and output. */
async function refusedStart(env: Record<string, string>) {
  const proc = watchProcess(process.execPath, serveArgs(), serviceEnv(env));
  const exit = await proc.exited;
  return { code: exit.code, output: proc.lines.join('\n') };
}

describe('configuration errors', () => {
  it('exits 1 with "PORT must be an integer" when PORT=abc', async () => {
    const result = await refusedStart({ PORT: 'abc' });
    assert.equal(result.code, 1);
    assert.match(result.output, /PORT must be an integer/);
  });

  it('refuses NATS_URL without MONGO_URL', async () => {
    const result = await refusedStart({ NATS_URL: 'nats://127.0.0.1:4222' });
    assert.equal(result.code, 1);
    assert.match(result.output, /NATS_URL is set without MONGO_URL/);
  });

  it('refuses MONGO_URL without ADMIN_TOKEN', async () => {
    const result = await refusedStart({ MONGO_URL: 'mongodb://127.0.0.1:1/x', ADMIN_TOKEN: '' });
    assert.equal(result.code, 1);
    assert.match(result.output, /ADMIN_TOKEN is required when MONGO_URL is set/);
  });
});

describe('embedded mode', () => {
  it('starts its own database, prints a demo key that lists the models, and stops everything on SIGTERM', async () => {
    const service = await startService({});
    const output = service.lines.join('\n');
    assert.match(output, /EMBEDDED mode/);
    assert.match(output, /in memory only/);
    const apiKey = /demo API key: (mf_\S+)/.exec(output)?.[1];
    assert.ok(apiKey, 'the banner prints a demo API key');
    assert.ok(service.adminToken, 'the banner prints the generated admin token');

    const models = await call<{ models: { id: string; credits: Record<string, unknown> }[] }>(
      service.url,
      'GET',
      '/api/v1/models',
      { token: apiKey },
    );
    assert.equal(models.status, 200);
    assert.deepEqual(
      models.body.models.map((m) => m.id),
      ['vidmodel-2.0', 'vidmodel-2.0-fast', 'imgmodel-2'],
    );
    assert.equal(models.body.models[0]!.credits.example_5s_with_audio, 1135);
    assert.equal(models.body.models[1]!.credits.example_5s_with_audio, 905);
    assert.deepEqual(models.body.models[2]!.credits, { per_image: 50 });

    const account = await call(service.url, 'GET', '/api/v1/account', { token: apiKey });
    assert.equal(account.body.credits, 100000);
    const admin = await call(service.url, 'GET', '/api/admin/v1/users', { token: service.adminToken });
    assert.equal(admin.status, 200);

    const childPids = await descendantsOf(service.proc.child.pid!);
    assert.ok(childPids.length > 0, 'jongodb runs as a child process');
    const exit = await service.stop('SIGTERM');
    assert.equal(exit.code, 0);
    for (const pid of childPids)
      assert.equal(isAlive(pid), false, `child ${pid} still running after shutdown`);
  });
});

describe('npm start', () => {
  it('stops the service and its embedded database when npm itself is sent SIGTERM (as a process manager does)', async () => {
    const proc = watchProcess('npm', ['start', '--silent'], {
      ...serviceEnv({}),
      npm_config_update_notifier: 'false',
    });
    const match = await proc.waitForLine(/listening on (http:\/\/\S+)/, 60_000);
    const health = await call(match[1]!, 'GET', '/healthz');
    assert.equal(health.status, 200);
    const tree = await descendantsDeep(proc.child.pid!);
    assert.ok(tree.length >= 2, 'the service and jongodb run below npm');
    proc.child.kill('SIGTERM');
    await proc.exited;
    const deadline = Date.now() + 15_000;
    while (tree.some(isAlive) && Date.now() < deadline) await sleep(100);
    assert.deepEqual(tree.filter(isAlive), [], 'no process is left behind');
  });
});

describe('graceful shutdown', () => {
  let mongo: TestMongo | undefined;
  after(async () => mongo?.stop());

  it('finishes a request in flight after SIGTERM, refuses new requests, and exits 0', async () => {
    mongo = await startMongo();
    const service = await startService({ MONGO_URL: mongo.uri });
    const { hostname, port } = new URL(service.url);
    const body = JSON.stringify({ email: 'inflight@example.com', credits: 7 });
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write(
      [
        'POST /api/admin/v1/users HTTP/1.1',
        'Host: x',
        `Authorization: Bearer ${TEST_ADMIN_TOKEN}`,
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        body.slice(0, 10),
      ].join('\r\n'),
    );
    await sleep(300); // the head is in and the request in flight (nothing outside shows it)
    service.proc.child.kill('SIGTERM');
    // Draining starts when the signal is handled: new requests are refused from then on (10 s at most).
    let refused = await call(service.url, 'GET', '/api/v1/models');
    for (
      const deadline = Date.now() + 10_000;
      refused.status !== 503 && Date.now() < deadline;
      await sleep(25)
    )
      refused = await call(service.url, 'GET', '/api/v1/models');
    assert.equal(refused.status, 503, 'a new request is refused while draining');
    socket.write(body.slice(10));
    const exit = await service.proc.exited;
    await closed;
    assert.equal(exit.code, 0);
    assert.match(answer, /^HTTP\/1\.1 201/);
    assert.match(answer, /inflight@example\.com/);
  });
});

describe('draining: /healthz 503, requests in flight finish, then exit', () => {
  let mongo: TestMongo | undefined;
  after(async () => mongo?.stop());

  it('answers /livez; on SIGTERM turns /healthz 503, refuses new requests, closes sockets 1012 and lets a turn finish', async () => {
    mongo = await startMongo();
    // A scene takes 2.5 s to render: SIGTERM arrives while the turn waits for it.
    const service = await startService({ MONGO_URL: mongo.uri, SANDBOX_VIDEO_MS: '2500' });
    const live = await call(service.url, 'GET', '/livez');
    assert.equal(live.status, 200);
    assert.equal(live.body.ok, true);
    const { token } = await editorUser(service);
    const editor = editorClient(() => service, token);
    const project = await editor.createProject({ name: 'drain' });
    const storyboard = await editor.instruct(project.id, {
      instruction: 'a 2-scene video about a lighthouse',
    });
    assert.equal(storyboard.status, 200);
    const socket = await openEventsSocket(service.url, project.id, { token });
    const probes = await keptAliveConnection(service.url);
    assert.match(await probes.get('/healthz'), /^HTTP\/1\.1 200/);

    const turn = editor.instruct(project.id, { instruction: 'continue' });
    await socket.waitFor('the scene being rendered', (events) =>
      events.some((e) => e.type === 'media.started'),
    );
    service.proc.child.kill('SIGTERM');
    const close = await socket.waitForClose(5000);
    assert.equal(close.code, 1012, 'the events socket is told to reconnect elsewhere');

    const health = await probes.get('/healthz');
    assert.match(health, /^HTTP\/1\.1 503/);
    assert.match(health, /"draining":true/);
    assert.match(await probes.get('/livez'), /^HTTP\/1\.1 200/, 'alive while it drains');
    const refused = await probes.get('/api/v1/models');
    assert.match(refused, /^HTTP\/1\.1 503/);
    assert.match(refused, /shutting down/);
    await probes.closed; // a refused request's connection is closed: the client retries elsewhere
    // New connections are still accepted while the node drains, so that probes on them are answered.
    const fresh = await keptAliveConnection(service.url);
    assert.match(await fresh.get('/livez'), /^HTTP\/1\.1 200/, 'liveness on a new connection');
    assert.match(await fresh.get('/healthz'), /^HTTP\/1\.1 503/, 'readiness on a new connection');
    assert.match(await fresh.get('/api/v1/account'), /^HTTP\/1\.1 503/, 'a new request on a new connection');

    const answer = await turn;
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.clips_created?.length, 1, 'the turn ran to its end and placed its scene');
    const exit = await service.proc.exited;
    assert.equal(exit.code, 0);
  });

  it('leaves a turn still running when the grace ends to its lease: the next node fails it and takes new turns', async () => {
    mongo ??= await startMongo();
    const env = { MONGO_URL: mongo.uri, SHUTDOWN_GRACE_MS: '300', TURN_LEASE_MS: '1500' };
    const first = await startService({ ...env, SANDBOX_VIDEO_MS: '8000' });
    const { token } = await editorUser(first, { credits: 10_000 });
    const before = editorClient(() => first, token);
    const project = await before.createProject({ name: 'lapsed' });
    await before.instruct(project.id, { instruction: 'a 2-scene video about a fox' });
    const socket = await openEventsSocket(first.url, project.id, { token });
    const turn = before.instruct(project.id, { instruction: 'continue' }).then(
      (answer) => `answered ${answer.status}`,
      (error: Error) => `failed: ${error.message}`,
    );
    await socket.waitFor('the scene being rendered', (events) =>
      events.some((e) => e.type === 'media.started'),
    );
    const turnId = socket.events.find((event) => event.type === 'turn.started')!.turn_id;
    const stoppedAt = Date.now();
    first.proc.child.kill('SIGTERM');
    const exit = await first.proc.exited;
    assert.equal(exit.code, 0);
    assert.ok(Date.now() - stoppedAt < 6000, 'the node left after its grace, not after the render');
    assert.match(await turn, /^failed/, 'the instruct connection ended with the node');

    const second = await startService({ ...env, SANDBOX_VIDEO_MS: '200' });
    const replay = await openEventsSocket(second.url, project.id, { token, since: 0 });
    const failed = await replay.waitFor(
      'the lapsed turn to be failed',
      (events) => events.some((event) => event.type === 'turn.failed' && event.turn_id === turnId),
      20_000,
    );
    assert.ok(failed.length > 0);
    const next = await editorClient(() => second, token).instruct(project.id, { instruction: 'continue' });
    assert.equal(next.status, 200, `the project takes turns again: ${JSON.stringify(next.body)}`);
    await replay.close();
    await second.stop();
  });
});

/** One HTTP/1.1 connection kept open, on which requests are sent one after the other. */
async function keptAliveConnection(baseUrl: string) {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let buffered = '';
  let waiting: (() => void) | undefined;
  socket.on('data', (chunk) => {
    buffered += chunk.toString('utf8');
    waiting?.();
  });
  const closed = new Promise((resolve) => socket.on('close', resolve));
  return {
    closed,
    /** The whole answer (head and body) to `GET path`. */
    async get(path: string): Promise<string> {
      buffered = '';
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      const complete = () => {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return false;
        const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
        return buffered.length >= end + 4 + length;
      };
      while (!complete()) await new Promise<void>((resolve) => (waiting = resolve));
      return buffered;
    },
  };
}

async function descendantsOf(pid: number): Promise<number[]> {
  const { readFileSync, readdirSync } = await import('node:fs');
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ')[1] === String(pid);
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function descendantsDeep(pid: number): Promise<number[]> {
  const children = await descendantsOf(pid);
  const below = await Promise.all(children.map(descendantsDeep));
  return [...children, ...below.flat()];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
