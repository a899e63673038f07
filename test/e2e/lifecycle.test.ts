import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, serveArgs, serviceEnv, TEST_ADMIN_TOKEN } from '../helpers/service.ts';
import { watchProcess } from '../helpers/processes.ts';

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

  it('finishes a request in flight after SIGTERM, refuses new connections, and exits 0', async () => {
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
    await sleep(300);
    service.proc.child.kill('SIGTERM');
    await sleep(500);
    await assert.rejects(fetch(`${service.url}/healthz`), 'a new connection is refused while draining');
    socket.write(body.slice(10));
    const exit = await service.proc.exited;
    await closed;
    assert.equal(exit.code, 0);
    assert.match(answer, /^HTTP\/1\.1 201/);
    assert.match(answer, /inflight@example\.com/);
  });
});

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
