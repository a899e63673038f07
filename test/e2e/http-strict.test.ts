// Strict HTTP at the front (docs/api.md#http-rules), end to end over raw sockets against the service as a
// process: ambiguous body framing gets 400 and the connection closes, on every kind of route (JSON, uploads,
// the dashboard, OAuth, MCP, the events WebSocket's handshake), and nothing the request or a request hidden
// behind it asked for is done; normal requests on the same kind of connection, kept alive, still work. The
// events WebSocket speaks version 13 only (426 otherwise). Webhook URLs under special-use names are refused
// when set, through the admin API and the dashboard, on a service without WEBHOOK_ALLOW_PRIVATE.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { startMongo, type TestMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, type RunningService } from '../helpers/service.ts';
import { RawConnection, rawRequest, type RawAnswer } from '../helpers/raw-http.ts';
import { editorClient, editorUser, makeMedia } from '../helpers/editor.ts';
import { Browser } from '../helpers/browser-form.ts';

const FRAMING = {
  repeatedLength: 'Ambiguous request: more than one Content-Length header',
  transferCoding: 'Unsupported Transfer-Encoding: only a single chunked coding is accepted',
};
const WRONG_VERSION = 'Unsupported WebSocket version: send Sec-WebSocket-Version: 13';
const PRIVATE_HOOK = 'url must not point to a private or local address';
/** uWebSockets.js's own refusal of framing its parser rejects before any handler (no Content-Length). */
const PARSER_REFUSAL = /^HTTP\/1\.1 400 Bad Request\r\nConnection: close\r\n\r\n<h1>Bad Request<\/h1>/;

type Fields = ReadonlyArray<readonly [string, string]>;

/** One route family: a request it accepts, as raw parts (its framing header fields are added per case). */
interface RouteCase {
  name: string;
  method: string;
  path: () => string;
  headers: () => Fields;
  body: () => Buffer;
  /** The status the request gets when its framing is sound. */
  okStatus: number;
}

let mongo: TestMongo;
let service: RunningService;
let admin: ReturnType<typeof adminClient>;
let editor: { token: string; keyId: string; userId: string };
let projectId: string;
let jobsToken: string;
/** A browser signed in to the dashboard: its cookie and CSRF token, and one key of its user. */
let dashboard: { browser: Browser; csrf: string; keyId: string };

before(async () => {
  mongo = await startMongo();
  service = await startService({
    MONGO_URL: mongo.uri,
    MONGO_DB: 'http_strict',
    SANDBOX_IMAGE_MS: '200',
    RATE_LIMIT_PER_MINUTE: '100000',
  });
  admin = adminClient(service);
  editor = await editorUser(service, { scopes: ['video-editor:read', 'video-editor:write', 'image:write'] });
  jobsToken = editor.token;
  projectId = (await editorClient(() => service, editor.token).createProject()).id;
  dashboard = await signIn();
});

/** A new user with a password and a key, signed in through /sign-in; its session's CSRF token. */
async function signIn(): Promise<typeof dashboard> {
  const email = `strict-${randomBytes(4).toString('hex')}@example.com`;
  const password = `pass-${randomBytes(8).toString('hex')}`;
  const userId = await admin.createUser(email, 0);
  const key = await admin.createKey(userId, ['image:write']);
  const set = await call(service.url, 'POST', `/api/admin/v1/users/${userId}/password`, {
    token: service.adminToken,
    body: { password },
  });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  const browser = new Browser(service.url);
  const signedIn = await browser.postForm('/sign-in', { email, password, next: '/account' });
  assert.equal(signedIn.status, 303, signedIn.text.slice(0, 300));
  const session = await browser.request('GET', '/api/dashboard/v1/session');
  const csrf = (JSON.parse(session.text) as { csrf_token: string }).csrf_token;
  return { browser, csrf, keyId: key.id };
}

after(async () => {
  await service?.stop();
  await mongo?.stop();
});

const png = makeMedia('png');
const json = (value: unknown) => Buffer.from(JSON.stringify(value));

const ROUTES: RouteCase[] = [
  {
    name: 'a JSON route (image generation)',
    method: 'POST',
    path: () => '/api/v1/image/nano-banana/generate',
    headers: () => [
      ['authorization', `Bearer ${jobsToken}`],
      ['content-type', 'application/json'],
    ],
    body: () => json({ prompt: 'framing [sandbox:hang]' }),
    okStatus: 202,
  },
  {
    name: 'an upload (streamed body)',
    method: 'POST',
    path: () => `/api/v1/media-studio/projects/${projectId}/assets`,
    headers: () => [
      ['authorization', `Bearer ${editor.token}`],
      ['content-type', 'image/png'],
    ],
    body: () => png,
    okStatus: 200,
  },
  {
    name: 'the dashboard session API',
    method: 'POST',
    path: () => '/api/dashboard/v1/keys',
    headers: () => [
      ['cookie', dashboard.browser.cookieHeader()],
      ['x-csrf-token', dashboard.csrf],
      ['origin', new URL(service.url).origin],
      ['content-type', 'application/json'],
    ],
    body: () => json({ name: 'framing', scopes: ['models:read'] }),
    okStatus: 201,
  },
  {
    name: 'OAuth',
    method: 'POST',
    path: () => '/oauth/register',
    headers: () => [['content-type', 'application/json']],
    body: () => json({ redirect_uris: ['http://127.0.0.1:9/callback'], client_name: 'framing' }),
    okStatus: 201,
  },
  {
    name: 'MCP',
    method: 'POST',
    path: () => '/api/mcp',
    headers: () => [
      ['authorization', `Bearer ${editor.token}`],
      ['content-type', 'application/json'],
      ['accept', 'application/json, text/event-stream'],
    ],
    body: () =>
      json({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'framing', version: '1' },
        },
      }),
    okStatus: 200,
  },
];

/** The framing cases the service refuses itself, with its JSON message. */
const REFUSED_BY_SERVICE: Array<{ name: string; framing: (length: number) => Fields; message: string }> = [
  {
    name: 'two different Content-Length values',
    framing: (length) => [
      ['content-length', String(length)],
      ['content-length', String(length + 40)],
    ],
    message: FRAMING.repeatedLength,
  },
  {
    name: 'the same Content-Length twice',
    framing: (length) => [
      ['content-length', String(length)],
      ['content-length', String(length)],
    ],
    message: FRAMING.repeatedLength,
  },
  {
    name: 'Transfer-Encoding: gzip, chunked',
    framing: () => [['transfer-encoding', 'gzip, chunked']],
    message: FRAMING.transferCoding,
  },
  {
    name: 'Transfer-Encoding: gzip',
    framing: () => [['transfer-encoding', 'gzip']],
    message: FRAMING.transferCoding,
  },
  {
    name: 'Transfer-Encoding: identity',
    framing: () => [['transfer-encoding', 'identity']],
    message: FRAMING.transferCoding,
  },
  {
    name: 'Transfer-Encoding: chunked twice',
    framing: () => [
      ['transfer-encoding', 'chunked'],
      ['transfer-encoding', 'chunked'],
    ],
    message: FRAMING.transferCoding,
  },
];

/** Framing uWebSockets.js's parser refuses before the service sees the request. */
const REFUSED_BY_PARSER: Array<{ name: string; framing: (length: number) => Fields }> = [
  {
    name: 'Content-Length and Transfer-Encoding',
    framing: (length) => [
      ['content-length', String(length)],
      ['transfer-encoding', 'chunked'],
    ],
  },
  {
    name: 'Transfer-Encoding and then Content-Length',
    framing: (length) => [
      ['transfer-encoding', 'chunked'],
      ['content-length', String(length)],
    ],
  },
  { name: 'a Content-Length list', framing: (length) => [['content-length', `${length}, ${length}`]] },
];

/** The body as the framing says it is sent: chunked when a Transfer-Encoding is present. */
function encodeBody(framing: Fields, body: Buffer): Buffer {
  if (!framing.some(([name]) => name === 'transfer-encoding')) return body;
  return Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
}

function requestOf(route: RouteCase, framing: Fields): Buffer {
  const body = route.body();
  return rawRequest(
    route.method,
    route.path(),
    [['host', 'strict.test'], ...route.headers(), ...framing],
    encodeBody(framing, body),
  );
}

/** Sends `bytes` on a new connection: the one answer, then whether the service closed the connection. */
async function oneAnswerThenEnd(
  bytes: Buffer,
): Promise<{ answer: RawAnswer; rest: string; closed: boolean }> {
  const conn = await RawConnection.open(service.url);
  conn.send(bytes);
  const answer = await conn.readResponse();
  const { rest, closed } = await conn.readToEnd();
  return { answer, rest, closed };
}

async function counts() {
  const [images, assets] = await Promise.all([
    call<{ jobs: unknown[] }>(service.url, 'GET', '/api/v1/jobs?limit=100', { token: jobsToken }),
    editorClient(() => service, editor.token).state(projectId),
  ]);
  const state = assets.body as unknown as { assets?: unknown[] };
  return { jobs: images.body.jobs.length, assets: state.assets?.length ?? 0 };
}

describe('ambiguous framing', () => {
  for (const route of ROUTES) {
    describe(route.name, () => {
      for (const bad of REFUSED_BY_SERVICE) {
        it(`answers 400 to ${bad.name} and closes the connection, doing nothing`, async () => {
          const before = await counts();
          const { answer, rest, closed } = await oneAnswerThenEnd(
            requestOf(route, bad.framing(route.body().length)),
          );
          assert.equal(answer.status, 400, answer.raw);
          assert.deepEqual(JSON.parse(answer.body), { error: bad.message });
          assert.equal(answer.headers['content-type'], 'application/json; charset=utf-8');
          assert.equal(answer.headers.connection, 'close');
          assert.deepEqual([rest, closed], ['', true], 'nothing more, and the connection closed');
          assert.deepEqual(await counts(), before, 'no job, no asset');
        });
      }

      for (const bad of REFUSED_BY_PARSER) {
        it(`answers 400 to ${bad.name} (the HTTP parser's own refusal) and closes the connection`, async () => {
          const before = await counts();
          const conn = await RawConnection.open(service.url);
          conn.send(requestOf(route, bad.framing(route.body().length)));
          const { rest, closed } = await conn.readToEnd();
          assert.match(rest, PARSER_REFUSAL);
          assert.equal(closed, true);
          assert.deepEqual(await counts(), before);
        });
      }

      it('serves the same request with sound framing, and the next one on the kept-alive connection', async () => {
        const conn = await RawConnection.open(service.url);
        for (const framing of [
          [['content-length', String(route.body().length)]],
          [['transfer-encoding', 'chunked']],
          [['transfer-encoding', 'Chunked']], // coding names are case-insensitive
        ] satisfies Fields[]) {
          conn.send(requestOf(route, framing));
          const answer = await conn.readResponse();
          assert.equal(answer.status, route.okStatus, answer.raw);
          assert.notEqual(answer.headers.connection, 'close', answer.raw);
        }
        const { closed } = await conn.readToEnd(300);
        assert.equal(closed, false, 'the connection stays open');
      });
    });
  }

  it('refuses a GET with two Content-Length values too (a proxy may read a body into it)', async () => {
    const { answer, closed } = await oneAnswerThenEnd(
      rawRequest('GET', '/healthz', [
        ['host', 'strict.test'],
        ['content-length', '0'],
        ['content-length', '5'],
      ]),
    );
    assert.deepEqual(
      [answer.status, JSON.parse(answer.body), closed],
      [400, { error: FRAMING.repeatedLength }, true],
    );
  });

  it('answers at once, without waiting for a body that is announced and never sent', async () => {
    const started = Date.now();
    const { answer, closed } = await oneAnswerThenEnd(
      rawRequest('POST', '/api/admin/v1/users', [
        ['host', 'strict.test'],
        ['authorization', `Bearer ${service.adminToken}`],
        ['content-type', 'application/json'],
        ['content-length', '100000'],
        ['content-length', '2'],
      ]),
    );
    assert.deepEqual([answer.status, closed], [400, true]);
    assert.ok(Date.now() - started < 2000, `answered after ${Date.now() - started} ms`);
  });

  it('never runs a request hidden behind the refused one, whichever length a reader believes', async () => {
    const email = `smuggled-${randomBytes(4).toString('hex')}@example.com`;
    const hidden = rawRequest(
      'POST',
      '/api/admin/v1/users',
      [
        ['host', 'strict.test'],
        ['authorization', `Bearer ${service.adminToken}`],
        ['content-type', 'application/json'],
        ['content-length', String(json({ email }).length)],
      ],
      json({ email }),
    );
    // The first Content-Length ends the body at `{}`; the second one swallows the hidden request.
    const outer = rawRequest(
      'POST',
      '/api/admin/v1/users',
      [
        ['host', 'strict.test'],
        ['authorization', `Bearer ${service.adminToken}`],
        ['content-type', 'application/json'],
        ['content-length', '2'],
        ['content-length', String(2 + hidden.length)],
      ],
      '{}',
    );
    const conn = await RawConnection.open(service.url);
    conn.send(Buffer.concat([outer, hidden]));
    const { rest, closed } = await conn.readToEnd();
    assert.equal(closed, true);
    // uWS drops a connection whose next request arrives while an answer is pending, possibly before the 400.
    assert.match(
      rest,
      /^(HTTP\/1\.1 400 Bad Request\r\n[^]*"Ambiguous request: more than one Content-Length header"\}|)$/,
    );
    const users = await call<{ users: { email: string }[] }>(
      service.url,
      'GET',
      '/api/admin/v1/users?limit=100',
      {
        token: service.adminToken,
      },
    );
    assert.equal(users.status, 200);
    assert.ok(!users.body.users.some((user) => user.email === email), 'the hidden request never ran');
  });
});

describe('the events WebSocket handshake', () => {
  const handshake = (version: string | undefined, extra: Fields = []) =>
    rawRequest('GET', `/api/v1/media-studio/projects/${projectId}/events`, [
      ['host', 'strict.test'],
      ['upgrade', 'websocket'],
      ['connection', 'Upgrade'],
      ['sec-websocket-key', 'dGhlIHNhbXBsZSBub25jZQ=='],
      ...(version === undefined ? [] : [['sec-websocket-version', version] as const]),
      ['authorization', `Bearer ${editor.token}`],
      ...extra,
    ]);

  for (const [name, version] of [
    ['version 99', '99'],
    ['no version', undefined],
    ['version 8', '8'],
  ] as const) {
    it(`answers 426 with Sec-WebSocket-Version: 13 to a handshake with ${name}, and upgrades nothing`, async () => {
      const { answer, rest, closed } = await oneAnswerThenEnd(handshake(version));
      assert.equal(answer.status, 426, answer.raw);
      assert.equal(answer.headers['sec-websocket-version'], '13');
      assert.equal(answer.headers.upgrade, 'websocket');
      assert.equal(answer.headers['sec-websocket-accept'], undefined);
      assert.deepEqual(JSON.parse(answer.body), { error: WRONG_VERSION });
      assert.deepEqual([rest, closed], ['', true]);
    });
  }

  it('refuses two versions (13 and 8) as not 13', async () => {
    const { answer } = await oneAnswerThenEnd(handshake('13', [['sec-websocket-version', '8']]));
    assert.deepEqual([answer.status, answer.headers['sec-websocket-version']], [426, '13']);
  });

  it('answers 400 to a handshake with ambiguous framing, before its version or key are looked at', async () => {
    const { answer, closed } = await oneAnswerThenEnd(
      handshake('13', [
        ['content-length', '0'],
        ['content-length', '7'],
      ]),
    );
    assert.deepEqual(
      [answer.status, JSON.parse(answer.body), closed],
      [400, { error: FRAMING.repeatedLength }, true],
    );
  });

  it('switches protocols for version 13, raw and with the ws package', async () => {
    const conn = await RawConnection.open(service.url);
    conn.send(handshake('13'));
    const answer = await conn.readResponse();
    assert.equal(answer.status, 101, answer.raw);
    assert.equal(answer.headers['sec-websocket-accept'], 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
    conn.close();

    const ws = new WebSocket(
      `${service.url.replace('http', 'ws')}/api/v1/media-studio/projects/${projectId}/events`,
      {
        headers: { authorization: `Bearer ${editor.token}` },
      },
    );
    await new Promise<void>((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    assert.equal(ws.readyState, WebSocket.OPEN);
    ws.close();
  });

  it('tells a plain request to the socket route which version to upgrade with', async () => {
    const answer = await call(service.url, 'GET', `/api/v1/media-studio/projects/${projectId}/events`, {
      token: editor.token,
    });
    assert.equal(answer.status, 426);
    assert.equal(answer.headers.get('sec-websocket-version'), '13');
  });
});

describe('webhook URLs under special-use names', () => {
  const SPECIAL = [
    'https://localhost./hook',
    'https://foo.localhost/hook',
    'https://printer.local/hook',
    'https://PRINTER.LOCAL./hook',
    'https://db.internal/hook',
    'https://x.home.arpa/hook',
    'https://abc.onion/hook',
  ];

  it('refuses them when set through the admin API, leaving the key without a webhook', async () => {
    for (const url of SPECIAL) {
      const answer = await admin.call('PUT', `/keys/${editor.keyId}/webhook`, { url });
      assert.deepEqual([answer.status, answer.body], [400, { error: PRIVATE_HOOK }], url);
    }
    const hook = await admin.call('GET', `/keys/${editor.keyId}/webhook`);
    assert.deepEqual(hook.body, { url: null, enabled: false });
    // A public name is still accepted (nothing is resolved when it is set).
    const ok = await admin.call('PUT', `/keys/${editor.keyId}/webhook`, {
      url: 'https://hooks.example.com/x',
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal((await admin.call('DELETE', `/keys/${editor.keyId}/webhook`)).status, 200);
  });

  it('refuses them when set from the dashboard', async () => {
    const { browser, csrf, keyId } = dashboard;
    for (const url of SPECIAL) {
      const answer = await browser.request('PUT', `/api/dashboard/v1/keys/${keyId}/webhook`, {
        headers: { 'x-csrf-token': csrf },
        body: JSON.stringify({ url }),
        contentType: 'application/json',
      });
      assert.deepEqual([answer.status, JSON.parse(answer.text)], [400, { error: PRIVATE_HOOK }], url);
    }
  });
});
