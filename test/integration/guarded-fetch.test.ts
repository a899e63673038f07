import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import dns, { type LookupAddress } from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  createGuardedFetch,
  guardedGet,
  guardedGetStream,
  guardedPost,
  type GuardedFetchOptions,
} from '../../src/platform/net/guarded-fetch.ts';
import { FetchRefused } from '../../src/platform/net/fetch-refused.ts';
import {
  createSelfSignedCert,
  createTestCa,
  startHttpsServer,
  type TestCa,
  type TestHttpsServer,
} from '../helpers/tls.ts';
import type { ChildAnswer, ChildRequest } from './guarded-fetch.child.ts';

const PRIVATE_OK: GuardedFetchOptions = { allowPrivate: true, timeoutMs: 5_000, maxBytes: 1_000 };
const STRICT: GuardedFetchOptions = { allowPrivate: false, timeoutMs: 5_000, maxBytes: 1_000 };
const IMAGE = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

/** What the test servers received, by path. */
const seen: { path: string; method: string; headers: IncomingMessage['headers']; body: string }[] = [];
const hits = (path: string) => seen.filter((entry) => entry.path === path).length;

/** One handler behind every test server: each path is one behaviour. */
function handle(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const path = req.url ?? '/';
    seen.push({
      path,
      method: req.method ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    });
    respond(path, req, res);
  });
}

function respond(path: string, req: IncomingMessage, res: ServerResponse): void {
  const host = `https://${req.headers.host}`;
  switch (path) {
    case '/image.png':
      return void res.writeHead(200, { 'content-type': 'image/png' }).end(IMAGE);
    case '/missing':
      return void res.writeHead(404, { 'content-type': 'text/plain' }).end('secret body of the error page');
    case '/hop-1':
      return void res.writeHead(302, { location: '/hop-2' }).end();
    case '/hop-2':
      return void res.writeHead(301, { location: `${host}/image.png` }).end();
    case '/loop':
      return void res.writeHead(307, { location: '/loop' }).end();
    case '/to-private':
      return void res.writeHead(302, { location: `https://127.0.0.2:${req.socket.localPort}/secret` }).end();
    case '/to-special':
      return void res
        .writeHead(302, { location: `https://db.internal:${req.socket.localPort}/secret` })
        .end();
    case '/to-ipv6-loopback':
      return void res.writeHead(302, { location: `https://[::1]:${req.socket.localPort}/secret` }).end();
    case '/to-http':
      return void res
        .writeHead(302, { location: `http://127.0.0.1:${req.socket.localPort}/image.png` })
        .end();
    case '/huge-declared':
      // Announces 10 MB and sends nothing: only a Content-Length check can refuse this before the time-out.
      res.writeHead(200, { 'content-length': '10000000', 'content-type': 'image/png' });
      return void res.flushHeaders();
    case '/chunked-1500':
      return writeChunks(res, 3, 500);
    case '/chunked-1000':
      return writeChunks(res, 2, 500);
    case '/cut-short':
      res.writeHead(200, { 'content-length': '100' });
      res.write('only ten b');
      return void setTimeout(() => res.destroy(), 50);
    case '/never':
      return; // headers never come
    case '/trickle': {
      res.writeHead(200, { 'content-type': 'image/png' });
      const timer = setInterval(() => res.write('x'), 100);
      return void res.on('close', () => clearInterval(timer));
    }
    case '/hook':
      return void res.writeHead(202, { 'content-type': 'text/plain' }).end('accepted');
    case '/hook-fails':
      return void res.writeHead(500).end('boom');
    case '/hook-chatty':
      return void res.writeHead(200).end('y'.repeat(100_000));
    case '/hook-moved':
      return void res.writeHead(308, { location: '/hook' }).end();
    default:
      return void res.writeHead(404).end();
  }
}

function writeChunks(res: ServerResponse, count: number, size: number): void {
  res.writeHead(200, { 'content-type': 'application/octet-stream' }); // no length: chunked
  let sent = 0;
  const timer = setInterval(() => {
    if (res.destroyed) return clearInterval(timer);
    res.write(Buffer.alloc(size, 7));
    if (++sent === count) {
      clearInterval(timer);
      res.end();
    }
  }, 20);
}

/** A long-lived child process (trusting the test CA) that runs guarded fetches on request. */
function startChild(caPath: string): {
  call(request: Omit<ChildRequest, 'id'>): Promise<ChildAnswer>;
  child: ChildProcess;
} {
  const script = fileURLToPath(new URL('./guarded-fetch.child.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: caPath },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const pending = new Map<number, (answer: ChildAnswer) => void>();
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const answer = JSON.parse(line) as ChildAnswer;
    pending.get(answer.id)?.(answer);
    pending.delete(answer.id);
  });
  let next = 0;
  return {
    child,
    call: (request) =>
      new Promise((resolve) => {
        const id = ++next;
        pending.set(id, resolve);
        child.stdin!.write(`${JSON.stringify({ ...request, id })}\n`);
      }),
  };
}

function assertRefused(
  answer: ChildAnswer,
  reason: string,
): asserts answer is Extract<ChildAnswer, { ok: false }> {
  assert.equal(answer.ok, false, `expected a refusal, got ${JSON.stringify(answer)}`);
  assert.equal(answer.name, 'FetchRefused');
  assert.equal(answer.reason, reason, answer.message);
}

/**
 * Counts every name resolution of this process, through either DNS API (`dns.lookup`, `dns.promises.lookup`,
 * which the default guard uses): each name is recorded and answered from `answers`, or refused as unknown;
 * nothing leaves the machine. `restore` puts the real functions back.
 */
function observeLookups(answers: Record<string, string> = {}): { names: string[]; restore(): void } {
  const names: string[] = [];
  const original = { lookup: dns.lookup, promised: dns.promises.lookup };
  const resolve = (hostname: string): LookupAddress => {
    names.push(hostname);
    const address = answers[hostname];
    if (address === undefined) throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return { address, family: 4 };
  };
  dns.promises.lookup = (async (hostname: string, options?: { all?: boolean }) => {
    const answer = resolve(hostname);
    return options?.all ? [answer] : answer;
  }) as typeof dns.promises.lookup;
  dns.lookup = ((hostname: string, options: unknown, done?: (...args: unknown[]) => void) => {
    const reply = (typeof options === 'function' ? options : done) as (...args: unknown[]) => void;
    const all = typeof options === 'object' && (options as { all?: boolean } | null)?.all;
    process.nextTick(() => {
      try {
        const answer = resolve(hostname);
        return all ? reply(null, [answer]) : reply(null, answer.address, answer.family);
      } catch (error) {
        return reply(error);
      }
    });
  }) as typeof dns.lookup;
  syncBuiltinESMExports(); // `import { lookup } from 'node:dns/promises'` in the guard now sees these
  return {
    names,
    restore() {
      dns.lookup = original.lookup;
      dns.promises.lookup = original.promised;
      syncBuiltinESMExports();
    },
  };
}

async function refusal(work: Promise<unknown>): Promise<FetchRefused> {
  try {
    await work;
  } catch (error) {
    assert.ok(error instanceof FetchRefused, `expected FetchRefused, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the fetch to be refused');
}

describe('guarded fetch', () => {
  let ca: TestCa;
  let trusted: TestHttpsServer;
  let selfSigned: TestHttpsServer;
  let plain: ReturnType<typeof createHttpServer>;
  let plainPort: number;
  let silent: ReturnType<typeof createTcpServer>;
  let silentPort: number;
  const silentSockets = new Set<Socket>();
  let client: ReturnType<typeof startChild>;

  before(async () => {
    ca = createTestCa();
    trusted = await startHttpsServer(handle, ca);
    selfSigned = await startHttpsServer(handle, createSelfSignedCert(ca.dir));
    plain = createHttpServer(handle);
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    plainPort = (plain.address() as AddressInfo).port;
    // Accepts TCP and never speaks: the TLS handshake itself hangs.
    silent = createTcpServer((socket) => silentSockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as AddressInfo).port;
    client = startChild(ca.caPath);
  });

  after(async () => {
    client.child.kill();
    for (const socket of silentSockets) socket.destroy();
    plain.closeAllConnections();
    await Promise.all([
      trusted.stop(),
      selfSigned.stop(),
      new Promise((resolve) => plain.close(resolve)),
      new Promise((resolve) => silent.close(resolve)),
    ]);
    ca.remove();
  });

  describe('TLS and addresses', () => {
    it('fetches an https URL from a server whose CA is trusted through NODE_EXTRA_CA_CERTS', async () => {
      for (const base of [trusted.url, `https://localhost:${trusted.port}`]) {
        const answer = await client.call({ op: 'get', url: `${base}/image.png`, options: PRIVATE_OK });
        assert.ok(answer.ok, JSON.stringify(answer));
        assert.equal(answer.status, 200);
        assert.equal(answer.contentType, 'image/png');
        assert.deepEqual(Buffer.from(answer.data!, 'base64'), IMAGE);
        assert.equal(answer.finalUrl, `${base}/image.png`);
      }
    });

    it('refuses the same URLs as loopback when private targets are not allowed, without connecting', async () => {
      const before = hits('/image.png');
      for (const base of [trusted.url, `https://localhost:${trusted.port}`]) {
        const answer = await client.call({ op: 'get', url: `${base}/image.png`, options: STRICT });
        assertRefused(answer, 'address');
        assert.equal(answer.message, 'the URL points to a private or local address');
      }
      assert.equal(hits('/image.png'), before);
    });

    it('refuses loopback IP literals in every spelling the URL parser accepts', async () => {
      const before = hits('/image.png');
      const spellings = [
        `https://2130706433:${trusted.port}/image.png`,
        `https://0x7f.1:${trusted.port}/image.png`,
        `https://0177.0.0.1:${trusted.port}/image.png`,
        `https://127.1:${trusted.port}/image.png`,
        `https://[::1]:${trusted.port}/image.png`,
        `https://[::ffff:127.0.0.1]:${trusted.port}/image.png`,
        `https://[0:0:0:0:0:ffff:7f00:1]:${trusted.port}/image.png`,
        `https://0.0.0.0:${trusted.port}/image.png`,
        `https://169.254.169.254/latest/meta-data/`,
      ];
      for (const url of spellings) {
        const error = await refusal(guardedGet(url, STRICT));
        assert.equal(error.reason, 'address', url);
      }
      assert.equal(hits('/image.png'), before);
    });

    it('refuses a host when any one of its addresses is private', async () => {
      const fetcher = createGuardedFetch({
        resolve: async () => [
          { address: '93.184.216.34', family: 4 },
          { address: '10.0.0.7', family: 4 },
        ],
      });
      const error = await refusal(fetcher.get('https://images.example/cat.png', STRICT));
      assert.equal(error.reason, 'address');
    });

    it('reports a host name that does not resolve as a network failure', async () => {
      const fetcher = createGuardedFetch({ resolve: async () => Promise.reject(new Error('ENOTFOUND')) });
      const error = await refusal(fetcher.get('https://nowhere.example/cat.png', STRICT));
      assert.equal(error.reason, 'network');
      assert.equal(error.message, 'the host name does not resolve');
    });

    it('connects to the address it checked and resolves the name only once (no DNS rebinding)', async () => {
      let lookups = 0;
      // First answer 127.0.0.1 (where the server is), then 127.0.0.2 (nothing listens): a second lookup
      // at connect time would fail the request.
      const fetcher = createGuardedFetch({
        resolve: async () => [{ address: lookups++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }],
      });
      const answer = await fetcher.get(`http://rebind.example:${plainPort}/image.png`, PRIVATE_OK);
      assert.deepEqual(answer.data, IMAGE);
      assert.equal(lookups, 1);
      assert.equal(seen.at(-1)?.headers.host, `rebind.example:${plainPort}`);
    });

    it('verifies the certificate against the URL host name, not the pinned address', async () => {
      const base = { op: 'get' as const, options: STRICT, publicAddresses: ['127.0.0.1'] };
      const good = await client.call({
        ...base,
        // `localhost` (the test certificate's name) is a special-use name, refused unless private targets are
        // allowed; with them allowed the certificate is checked all the same.
        options: PRIVATE_OK,
        url: `https://localhost:${trusted.port}/image.png`,
        hosts: { localhost: ['127.0.0.1'] },
      });
      assert.ok(good.ok, JSON.stringify(good));
      const wrongName = await client.call({
        ...base,
        url: `https://media.example:${trusted.port}/image.png`,
        hosts: { 'media.example': ['127.0.0.1'] },
      });
      assertRefused(wrongName, 'network');
      assert.match(wrongName.message, /certificate is not trusted \(ERR_TLS_CERT_ALTNAME_INVALID\)/);
    });

    it('refuses a self-signed certificate that is not from the trusted test CA', async () => {
      const answer = await client.call({
        op: 'get',
        url: `${selfSigned.url}/image.png`,
        options: PRIVATE_OK,
      });
      assertRefused(answer, 'network');
      assert.match(answer.message, /certificate is not trusted/);
    });

    it('does not trust the test CA in a process started without NODE_EXTRA_CA_CERTS', async () => {
      const error = await refusal(guardedGet(`${trusted.url}/image.png`, PRIVATE_OK));
      assert.equal(error.reason, 'network');
      assert.match(error.message, /certificate is not trusted/);
    });
  });

  describe('special-use names', () => {
    const NAMES = [
      'localhost',
      'localhost.',
      'foo.localhost',
      'LOCALHOST',
      'printer.local',
      'Printer.LOCAL.',
      'db.internal',
      'x.home.arpa',
      'abc.onion',
    ];
    const PRIVATE = 'the URL points to a private or local address';

    it('refuses them in GET, streamed GET and POST before any DNS query', async () => {
      const lookups = observeLookups();
      try {
        for (const name of NAMES) {
          const url = `https://${name}/image.png`;
          for (const attempt of [
            guardedGet(url, STRICT),
            guardedGetStream(url, STRICT),
            guardedPost(url, '{}', {}, STRICT),
          ]) {
            const error = await refusal(attempt);
            assert.deepEqual([error.reason, error.message], ['address', PRIVATE], url);
          }
        }
        assert.deepEqual(lookups.names, [], 'no name was resolved');
        // The observer does see the guard's lookups: an ordinary name is resolved (and, unknown here, refused).
        const ordinary = await refusal(guardedGet('https://images.example/cat.png', STRICT));
        assert.equal(ordinary.message, 'the host name does not resolve');
        assert.deepEqual(lookups.names, ['images.example']);
      } finally {
        lookups.restore();
      }
    });

    it('resolves and fetches them when private targets are allowed (WEBHOOK_ALLOW_PRIVATE)', async () => {
      const lookups = observeLookups({ 'printer.local': '127.0.0.1' });
      try {
        const answer = await guardedGet(`http://printer.local:${plainPort}/image.png`, PRIVATE_OK);
        assert.deepEqual(answer.data, IMAGE);
        assert.deepEqual(lookups.names, ['printer.local']);
      } finally {
        lookups.restore();
      }
    });

    it('refuses a redirect to one after a public first hop, without resolving it', async () => {
      const before = hits('/secret');
      const answer = await client.call({
        op: 'get',
        url: `${trusted.url}/to-special`,
        options: STRICT,
        publicAddresses: ['127.0.0.1'],
        hosts: {}, // a resolution of db.internal would fail as "does not resolve", not as a private address
      });
      assertRefused(answer, 'address');
      assert.equal(answer.message, PRIVATE);
      assert.equal(hits('/secret'), before);
    });
  });

  describe('schemes', () => {
    it('refuses http, other schemes and unparseable URLs unless private targets are allowed', async () => {
      for (const url of [
        `http://127.0.0.1:${plainPort}/image.png`,
        'http://example.com/a.png',
        'ftp://example.com/a',
        'file:///etc/passwd',
        'not a url',
      ]) {
        const error = await refusal(guardedGet(url, STRICT));
        assert.equal(error.reason, 'scheme', url);
      }
    });

    it('fetches plain http when private targets are allowed (tests)', async () => {
      const answer = await guardedGet(`http://127.0.0.1:${plainPort}/image.png`, PRIVATE_OK);
      assert.deepEqual(answer.data, IMAGE);
    });
  });

  describe('redirects', () => {
    it('follows relative and absolute redirects and reports the final URL', async () => {
      const answer = await client.call({ op: 'get', url: `${trusted.url}/hop-1`, options: PRIVATE_OK });
      assert.ok(answer.ok, JSON.stringify(answer));
      assert.equal(answer.finalUrl, `${trusted.url}/image.png`);
      assert.deepEqual(Buffer.from(answer.data!, 'base64'), IMAGE);
    });

    it('refuses a redirect to a private address even after a public first hop', async () => {
      const before = hits('/secret');
      for (const path of ['/to-private', '/to-ipv6-loopback']) {
        const answer = await client.call({
          op: 'get',
          url: `${trusted.url}${path}`,
          options: STRICT,
          publicAddresses: ['127.0.0.1'], // this test's stand-in for a public server
        });
        assertRefused(answer, 'address');
      }
      assert.equal(hits('/secret'), before);
    });

    it('refuses a redirect from https to http', async () => {
      const answer = await client.call({
        op: 'get',
        url: `${trusted.url}/to-http`,
        options: STRICT,
        publicAddresses: ['127.0.0.1'],
      });
      assertRefused(answer, 'scheme');
    });

    it('gives up on a redirect loop after maxRedirects hops', async () => {
      const before = hits('/loop');
      const answer = await client.call({ op: 'get', url: `${trusted.url}/loop`, options: PRIVATE_OK });
      assertRefused(answer, 'redirects');
      assert.equal(answer.message, 'more than 3 redirects');
      assert.equal(hits('/loop') - before, 4);
      const once = await client.call({
        op: 'get',
        url: `${trusted.url}/hop-1`,
        options: { ...PRIVATE_OK, maxRedirects: 1 },
      });
      assertRefused(once, 'redirects');
    });
  });

  describe('answers', () => {
    it('refuses a non-2xx answer with its status and never its body', async () => {
      const answer = await client.call({ op: 'get', url: `${trusted.url}/missing`, options: PRIVATE_OK });
      assertRefused(answer, 'status');
      assert.equal(answer.message, 'the server answered HTTP 404');
    });

    it('refuses a body announced larger than maxBytes at once, by its Content-Length', async () => {
      const answer = await client.call({
        op: 'get',
        url: `${trusted.url}/huge-declared`,
        options: PRIVATE_OK,
      });
      assertRefused(answer, 'too_large');
      assert.equal(answer.message, 'the answer is larger than 1000 bytes');
      assert.ok(answer.elapsedMs < 2_000, `took ${answer.elapsedMs} ms`);
    });

    it('refuses a chunked body once the bytes streamed exceed maxBytes, and accepts exactly maxBytes', async () => {
      const over = await client.call({ op: 'get', url: `${trusted.url}/chunked-1500`, options: PRIVATE_OK });
      assertRefused(over, 'too_large');
      const exact = await client.call({ op: 'get', url: `${trusted.url}/chunked-1000`, options: PRIVATE_OK });
      assert.ok(exact.ok, JSON.stringify(exact));
      assert.equal(Buffer.from(exact.data!, 'base64').length, 1_000);
    });

    it('reports a connection cut before the announced length as a network failure', async () => {
      const answer = await client.call({ op: 'get', url: `${trusted.url}/cut-short`, options: PRIVATE_OK });
      assertRefused(answer, 'network');
    });

    it('times out on a server that never answers, whether in the TLS handshake or after the request', async () => {
      const options = { ...PRIVATE_OK, timeoutMs: 500 };
      for (const url of [`${trusted.url}/never`, `https://127.0.0.1:${silentPort}/`]) {
        const answer = await client.call({ op: 'get', url, options });
        assertRefused(answer, 'timeout');
        assert.equal(answer.message, 'no complete answer within 500 ms');
        assert.ok(answer.elapsedMs >= 450 && answer.elapsedMs < 2_000, `took ${answer.elapsedMs} ms`);
      }
    });

    it('times out on a server that trickles the body slowly within the size cap', async () => {
      const answer = await client.call({
        op: 'get',
        url: `${trusted.url}/trickle`,
        options: { ...PRIVATE_OK, timeoutMs: 600 },
      });
      assertRefused(answer, 'timeout');
      assert.ok(answer.elapsedMs < 2_000, `took ${answer.elapsedMs} ms`);
    });
  });

  describe('guardedPost', () => {
    const headers = {
      'Content-Type': 'application/json',
      'X-Svc-Event': 'job.completed',
      'User-Agent': 'Svc-Webhooks/1.0',
    };

    it('sends the body and headers over verified TLS and returns the status and answer', async () => {
      const body = JSON.stringify({ job_id: 'job_1', status: 'completed' });
      const answer = await client.call({
        op: 'post',
        url: `${trusted.url}/hook`,
        body,
        headers,
        options: PRIVATE_OK,
      });
      assert.ok(answer.ok, JSON.stringify(answer));
      assert.deepEqual([answer.status, answer.body], [202, 'accepted']);
      const received = seen.findLast((entry) => entry.path === '/hook')!;
      assert.equal(received.method, 'POST');
      assert.equal(received.body, body);
      assert.equal(received.headers['content-type'], 'application/json');
      assert.equal(received.headers['x-svc-event'], 'job.completed');
      assert.equal(received.headers['user-agent'], 'Svc-Webhooks/1.0');
      assert.equal(received.headers['content-length'], String(Buffer.byteLength(body)));
    });

    it('returns non-2xx and redirect statuses instead of throwing, and truncates a long answer', async () => {
      const failed = await guardedPost(`http://127.0.0.1:${plainPort}/hook-fails`, '{}', headers, PRIVATE_OK);
      assert.deepEqual(failed, { status: 500, body: 'boom' });
      const moved = await guardedPost(`http://127.0.0.1:${plainPort}/hook-moved`, '{}', headers, PRIVATE_OK);
      assert.equal(moved.status, 308);
      const chatty = await guardedPost(
        `http://127.0.0.1:${plainPort}/hook-chatty`,
        '{}',
        headers,
        PRIVATE_OK,
      );
      assert.deepEqual(chatty, { status: 200, body: 'y'.repeat(1_000) });
    });

    it('refuses private targets and http with the same guard as GET, without connecting', async () => {
      const before = hits('/hook');
      const https = await client.call({
        op: 'post',
        url: `${trusted.url}/hook`,
        body: '{}',
        headers,
        options: STRICT,
      });
      assertRefused(https, 'address');
      const http = await refusal(guardedPost(`http://127.0.0.1:${plainPort}/hook`, '{}', headers, STRICT));
      assert.equal(http.reason, 'scheme');
      assert.equal(hits('/hook'), before);
    });

    it('times out on a receiver that never answers', async () => {
      const answer = await client.call({
        op: 'post',
        url: `${trusted.url}/never`,
        body: '{}',
        headers,
        options: { ...PRIVATE_OK, timeoutMs: 400 },
      });
      assertRefused(answer, 'timeout');
    });
  });
});
