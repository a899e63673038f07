// The README's browser client for the events WebSocket, run as written (the `ws` package stands in for the
// browser's WebSocket: same onopen/onmessage/onclose shape): it sees every event of a project once and in
// order across a restart of the service (single-node mode: MongoDB outlives it, the socket gets 1012 and the
// client comes back with since=), and stops on its own when the project is deleted (1000).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { adminClient, call, startService, type RunningService } from '../helpers/service.ts';
import { until } from '../helpers/wait.ts';

interface Event {
  type: string;
  seq: number;
  data: Record<string, unknown>;
}
type WatchProject = (options: {
  baseUrl: string;
  projectId: string;
  key: string;
  onEvent(event: Event): void;
  onReset(event: Event): void;
}) => () => void;

/**
 * A browser's WebSocket as far as the example uses it: the ws package, whose failed handshakes (the restarted
 * service answers 503 while it starts) also end in `onclose`; unlike a browser it throws on an 'error' nobody
 * listens to.
 */
class BrowserLikeWebSocket extends WebSocket {
  /** Handshakes that succeeded, so the test edits only once the first socket is live. */
  static opened = 0;
  constructor(url: string) {
    super(url);
    this.on('error', () => undefined);
    this.on('open', () => BrowserLikeWebSocket.opened++);
  }
}

/** The README's `watchProject`, evaluated with `WebSocket` bound to a browser-like client. */
function readmeClient(): WatchProject {
  const readme = readFileSync(fileURLToPath(new URL('../../docs/editor.md', import.meta.url)), 'utf8');
  const block = /```js\n(\/\/ Every event of a project[\s\S]*?)```/.exec(readme);
  assert.ok(block, 'the README holds the events client example');
  return new Function('WebSocket', `${block[1]}\nreturn watchProject;`)(BrowserLikeWebSocket) as WatchProject;
}

/** A port that was free a moment ago: the restarted service must come back at the same address. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the README events client', () => {
  let mongo: TestMongo;
  let service: RunningService;
  let port: number;
  const start = () =>
    startService({ MONGO_URL: mongo.uri, PORT: String(port), RATE_LIMIT_PER_MINUTE: '100000' });

  before(async () => {
    mongo = await startMongo();
    port = await freePort();
    service = await start();
  });
  after(async () => {
    await service?.stop('SIGKILL');
    await mongo?.stop();
  });

  it('sees every event once and in order across a restart of the service, and stops when the project goes', async () => {
    const admin = adminClient(service);
    const userId = await admin.createUser('readme-client@example.com', 1000);
    const { apiKey } = await admin.createKey(userId, ['video-editor:read', 'video-editor:write']);
    const api = (method: string, path: string, body?: unknown) =>
      call<Record<string, unknown>>(service.url, method, `/api/v1/media-studio${path}`, {
        token: apiKey,
        body,
      });
    const created = await api('POST', '/projects', { name: 'Readme' });
    assert.equal(created.status, 200);
    const projectId = (created.body.project as { id: string }).id;

    const events: Event[] = [];
    const resets: Event[] = [];
    const lastName = () =>
      events.findLast((event) => event.type === 'project.updated')?.data.project as
        { name: string } | undefined;
    const stop = readmeClient()({
      baseUrl: service.url,
      projectId,
      key: apiKey,
      onEvent: (event) => events.push(event),
      onReset: (event) => resets.push(event),
    });
    try {
      // A first connection (no since=) carries what happens after its handshake: an edit sent before the
      // handshake is checked is in the project, not in the socket, so the first edit waits for it.
      await until(
        'the socket opens',
        () => BrowserLikeWebSocket.opened,
        (opened) => opened > 0,
      );
      // The socket is live once an edit made now reaches it.
      await until(
        'the socket is live',
        async () => {
          await api('PATCH', `/projects/${projectId}`, { description: 'warming up' });
          return events.length;
        },
        (count) => count > 0,
      );
      for (let n = 1; n <= 5; n++)
        assert.equal((await api('PATCH', `/projects/${projectId}`, { name: `Before ${n}` })).status, 200);
      await until(
        'the edits before the restart arrive',
        () => lastName(),
        (project) => project?.name === 'Before 5',
      );

      await service.stop('SIGTERM'); // the socket is closed with 1012; the client retries with since=
      service = await start();
      for (let n = 1; n <= 5; n++)
        assert.equal((await api('PATCH', `/projects/${projectId}`, { name: `After ${n}` })).status, 200);
      await until(
        'the edits after the restart arrive',
        () => lastName(),
        (project) => project?.name === 'After 5',
        20_000,
      );

      assert.equal((await api('DELETE', `/projects/${projectId}`)).status, 200);
      await until(
        'the deletion arrives',
        () => events.at(-1)?.type,
        (type) => type === 'project.deleted',
      );
    } finally {
      stop();
    }
    const seqs = events.map((event) => event.seq);
    assert.deepEqual(
      seqs,
      seqs.map((_, index) => seqs[0]! + index),
      'every seq once, in order, none missing',
    );
    assert.equal(seqs[0], 1);
    assert.deepEqual(resets, []);
  });
});
