// Fuzzing every route that takes JSON or parameters: the service as a process in embedded
// mode with private targets NOT allowed, a seeded corpus of hostile requests — deep nesting, lone surrogates
// and invalid UTF-8, `__proto__`/`constructor` keys, 1e309, -0, huge integers, broken percent-encoding in
// URLs, paths and queries, loopback and numeric-IP URLs, wrong types for every field, empty and non-object
// bodies — over every public and admin route. No answer may be a 5xx, and every /api error is `{ error }`.
// The defects the probing found are asserted by their exact answers, so undoing any of their fixes fails this
// file: deep nesting → 400 `Request body is nested too deeply`; an own media URL whose path does not decode →
// 400 with the field's URL message; a literal private webhook host → 400 `url must not point to a private or
// local address`, the key still without a webhook.
//
// Deterministic: MF_FUZZ_SEED (default below) fixes the corpus; every failure message names the seed and the
// case, so `MF_FUZZ_SEED=<seed> npx tsx --test test/e2e/fuzz.test.ts` replays it.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startService, adminClient, type RunningService } from '../helpers/service.ts';
import { ImageGenerateBody, VideoGenerateBody } from '../../schemas/jobs.ts';
import {
  BROKEN_ENCODINGS,
  PRIVATE_WEBHOOK_URLS,
  deepArrays,
  deepObjects,
  objectText,
  oddIds,
  oddValue,
  plausibleJobValues,
  prng,
  randomBody as bodyOf,
  randomQuery,
  type Random,
} from '../helpers/fuzz-values.ts';

const SEED = Number(process.env.MF_FUZZ_SEED ?? 20_261_006);
const RANDOM_CASES = Number(process.env.MF_FUZZ_CASES ?? 1500);
const CONCURRENCY = 8;

const TOO_DEEP = 'Request body is nested too deeply';
const PRIVATE_HOOK = 'url must not point to a private or local address';

/** One request of the corpus. */
interface Case {
  label: string;
  method: string;
  path: string;
  token?: string;
  body?: Buffer;
  /** The exact answer expected, when the case targets one of the fixes. */
  expect?: { status: number; body: Record<string, unknown> };
}

interface Answer {
  status: number;
  text: string;
}

describe(`fuzzing every route (seed ${SEED})`, () => {
  let service: RunningService;
  let admin: ReturnType<typeof adminClient>;
  /** A user with 0 credits: any body that validates ends in 402, before anything is fetched. */
  let poor: { userId: string; token: string };
  /** A user with credits whose valid submissions hang in the sandbox (no render, cancelled at the end). */
  let rich: { userId: string; token: string };
  /** Targets of the admin routes: a user for credits and keys, a key for webhooks, one that never gets one. */
  let target: { userId: string; keyId: string; cleanKeyId: string };
  const createdJobs = new Set<string>();

  before(async () => {
    service = await startService({
      RATE_LIMIT_PER_MINUTE: '10000000',
      AUTH_FAILURES_PER_MINUTE: '10000000',
      PROVIDER_POLL_INTERVAL_MS: '5000',
      PROVIDER_TIMEOUT_MS: '600000',
      LOG_LEVEL: 'error',
    });
    admin = adminClient(service);
    const account = async (tag: string, credits: number) => {
      const userId = await admin.createUser(`fuzz-${tag}@example.com`, credits);
      return { userId, token: (await admin.createKey(userId, ['video:write', 'image:write'])).apiKey };
    };
    poor = await account('poor', 0);
    rich = await account('rich', 10_000_000);
    const targetUser = await admin.createUser('fuzz-target@example.com', 1000);
    target = {
      userId: targetUser,
      keyId: (await admin.createKey(targetUser, [])).id,
      cleanKeyId: (await admin.createKey(targetUser, [])).id,
    };
  });
  after(async () => {
    await service?.stop();
  });

  const tokens = () => ({ poor: poor.token, rich: rich.token, admin: service.adminToken });

  async function send(request: Case): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (request.token !== undefined) headers.authorization = `Bearer ${request.token}`;
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${service.url}${request.path}`, {
      method: request.method,
      headers,
      ...(request.body !== undefined ? { body: request.body } : {}),
    });
    return { status: response.status, text: await response.text() };
  }

  /** What every answer must be: no 5xx; /api errors are a JSON `{ error: string }`; the expected answer. */
  function check(request: Case, answer: Answer): void {
    const where = `[seed ${SEED}] ${request.label}: ${request.method} ${request.path.slice(0, 200)}`;
    const body = request.body?.toString('utf8') ?? '';
    const shown = `${where} body ${JSON.stringify(body.slice(0, 300))}${body.length > 300 ? '…' : ''}`;
    assert.ok(answer.status < 500, `${shown} answered ${answer.status} ${answer.text.slice(0, 300)}`);
    if (request.path.startsWith('/api/') && answer.status >= 400) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(answer.text);
      } catch {
        assert.fail(
          `${shown} answered ${answer.status} with a body that is not JSON: ${answer.text.slice(0, 200)}`,
        );
      }
      assert.equal(typeof (parsed as { error?: unknown }).error, 'string', `${shown}: ${answer.text}`);
    }
    if (request.expect) {
      assert.deepEqual(
        { status: answer.status, body: JSON.parse(answer.text) as unknown },
        request.expect,
        `${shown} answered ${answer.status} ${answer.text.slice(0, 300)}`,
      );
    }
  }

  async function run(cases: Case[]): Promise<Answer[]> {
    const answers: Answer[] = new Array<Answer>(cases.length);
    let nextIndex = 0;
    const worker = async () => {
      while (nextIndex < cases.length) {
        const index = nextIndex++;
        const request = cases[index]!;
        let answer: Answer;
        try {
          answer = await send(request);
        } catch (error) {
          assert.fail(`[seed ${SEED}] ${request.label}: ${request.method} ${request.path}: ${String(error)}`);
        }
        check(request, answer);
        answers[index] = answer;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    return answers;
  }

  /** The routes that take a JSON body, with a valid body each and the token and path they need. */
  function bodyRoutes() {
    return [
      {
        name: 'video',
        method: 'POST',
        path: '/api/v1/video/vidmodel-2/generate',
        token: poor.token,
        valid: { prompt: 'a lighthouse', duration_seconds: 4, resolution: '480p' },
      },
      {
        name: 'image',
        method: 'POST',
        path: '/api/v1/image/nano-banana/generate',
        token: poor.token,
        valid: { prompt: 'a fox', num_images: 1 },
      },
      {
        name: 'create user',
        method: 'POST',
        path: '/api/admin/v1/users',
        token: service.adminToken,
        valid: { email: 'deep@example.com' },
      },
      {
        name: 'grant credits',
        method: 'POST',
        path: `/api/admin/v1/users/${target.userId}/credits`,
        token: service.adminToken,
        valid: { amount: 1 },
      },
      {
        name: 'create key',
        method: 'POST',
        path: `/api/admin/v1/users/${target.userId}/keys`,
        token: service.adminToken,
        valid: { scopes: [] },
      },
      {
        name: 'set webhook',
        method: 'PUT',
        path: `/api/admin/v1/keys/${target.cleanKeyId}/webhook`,
        token: service.adminToken,
        valid: { url: 'https://example.com/hook' },
      },
    ];
  }

  it('refuses JSON nested deeper than 64 levels on every JSON route, and nothing at 64', async () => {
    const cases: Case[] = [];
    const tooDeep = { status: 400, body: { error: TOO_DEEP } };
    for (const route of bodyRoutes()) {
      const base = { method: route.method, path: route.path, token: route.token };
      const firstField = Object.keys(route.valid)[0]!;
      for (const depth of [65, 100, 2000, 10_000]) {
        for (const [shape, nest] of [
          ['arrays', deepArrays],
          ['objects', deepObjects],
        ] as const) {
          cases.push(
            {
              ...base,
              label: `${route.name}: ${shape} ${depth} deep`,
              body: Buffer.from(nest(depth)),
              expect: tooDeep,
            },
            {
              ...base,
              label: `${route.name}: ${shape} ${depth} deep in ${firstField}`,
              // One level is the body object itself.
              body: Buffer.from(objectText([[firstField, nest(depth - 1)]])),
              expect: tooDeep,
            },
          );
        }
      }
      // Invalid JSON comes first, however deep; exactly 64 levels is within the limit.
      cases.push(
        {
          ...base,
          label: `${route.name}: deep and unclosed`,
          body: Buffer.from('['.repeat(5000)),
          expect: { status: 400, body: { error: 'Invalid JSON body' } },
        },
        {
          ...base,
          label: `${route.name}: 64 levels of arrays`,
          body: Buffer.from(deepArrays(64)),
          expect: { status: 400, body: { error: 'Request body must be a JSON object' } },
        },
      );
    }
    const answers = await run(cases);
    // 64 levels inside a field reach validation: whatever it says, it is not the nesting refusal.
    const withinLimit = await run(
      bodyRoutes().map((route) => ({
        label: `${route.name}: 64 levels in a field`,
        method: route.method,
        path: route.path,
        token: route.token,
        body: Buffer.from(objectText([[Object.keys(route.valid)[0]!, deepArrays(63)]])),
      })),
    );
    for (const answer of withinLimit) {
      assert.equal(answer.status, 400, answer.text);
      assert.notEqual((JSON.parse(answer.text) as { error: string }).error, TOO_DEEP);
    }
    assert.equal(answers.length, cases.length);
  });

  it("refuses an own media URL whose path does not decode with the field's URL message, charging nothing", async () => {
    const cases: Case[] = [];
    for (const [who, token] of [
      // The rich user first: without the fix its answer is the 500 (the poor user's is a 402).
      ['rich', rich.token],
      ['poor', poor.token],
    ] as const) {
      for (const broken of BROKEN_ENCODINGS) {
        const url = `${service.url}/media/${broken}`;
        cases.push(
          {
            label: `${who}: image_url …/media/${broken}`,
            method: 'POST',
            path: '/api/v1/video/vidmodel-2/generate',
            token,
            body: Buffer.from(JSON.stringify({ prompt: '[sandbox:hang] p', image_url: url })),
            expect: { status: 400, body: { error: 'image_url must be a https URL' } },
          },
          {
            label: `${who}: image_urls […/media/${broken}]`,
            method: 'POST',
            path: '/api/v1/image/nano-banana/generate',
            token,
            body: Buffer.from(
              JSON.stringify({ prompt: '[sandbox:hang] p', image_urls: ['https://127.0.0.1/a.png', url] }),
            ),
            expect: { status: 400, body: { error: 'image_urls items must be https URLs' } },
          },
        );
      }
    }
    await run(cases);
    const account = await fetch(`${service.url}/api/v1/account`, {
      headers: { authorization: `Bearer ${rich.token}` },
    });
    assert.equal(((await account.json()) as { credits: number }).credits, 10_000_000, 'nothing was charged');
  });

  it('refuses every literal private or local webhook host, leaving the key without a webhook', async () => {
    const path = `/api/admin/v1/keys/${target.cleanKeyId}/webhook`;
    const cases: Case[] = PRIVATE_WEBHOOK_URLS.map((url) => ({
      label: `webhook ${url}`,
      method: 'PUT',
      path,
      token: service.adminToken,
      body: Buffer.from(JSON.stringify({ url })),
      expect: { status: 400, body: { error: PRIVATE_HOOK } },
    }));
    // The https rule still comes first.
    for (const url of ['http://127.0.0.1/hook', 'http://localhost', 'ftp://[::1]/']) {
      cases.push({
        label: `webhook ${url}`,
        method: 'PUT',
        path,
        token: service.adminToken,
        body: Buffer.from(JSON.stringify({ url })),
        expect: { status: 400, body: { error: 'url must be a https URL' } },
      });
    }
    await run(cases);
    const read = await send({ label: 'read webhook', method: 'GET', path, token: service.adminToken });
    assert.deepEqual(
      JSON.parse(read.text),
      { url: null, enabled: false },
      `[seed ${SEED}] no URL was stored`,
    );
  });

  it(`answers no 5xx to ${RANDOM_CASES} seeded random requests over every route`, async (t) => {
    const random = prng(SEED);
    const cases = Array.from({ length: RANDOM_CASES }, (_, index) => randomCase(random, index));
    const answers = await run(cases);
    // Cancel what the rich user got accepted (a DELETE of each, another route under test).
    for (const [index, answer] of answers.entries()) {
      if (answer.status !== 202) continue;
      const jobId = (JSON.parse(answer.text) as { job_id?: string }).job_id;
      if (jobId && cases[index]!.token === rich.token) createdJobs.add(jobId);
    }
    const cancels = await run(
      [...createdJobs].flatMap((jobId) => [
        {
          label: 'cancel an accepted job',
          method: 'DELETE',
          path: `/api/v1/jobs/${jobId}`,
          token: rich.token,
        },
        { label: "another user's job", method: 'GET', path: `/api/v1/jobs/${jobId}`, token: poor.token },
      ]),
    );
    for (const [index, answer] of cancels.entries()) {
      assert.equal(answer.status, index % 2 === 0 ? 200 : 404, answer.text);
    }
    const statuses = new Map<number, number>();
    for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    t.diagnostic(
      `seed ${SEED}: answers by status ${JSON.stringify(Object.fromEntries(statuses))}, ${createdJobs.size} jobs accepted`,
    );
    // The corpus reaches past validation too (accepted jobs, created users), not only 400s.
    assert.ok((statuses.get(400) ?? 0) > RANDOM_CASES / 10, JSON.stringify([...statuses]));
    assert.ok(
      answers.some((answer) => answer.status < 300),
      JSON.stringify([...statuses]),
    );
    const health = await fetch(`${service.url}/healthz`);
    assert.equal(health.status, 200, 'the service is still healthy');
  });

  // ---- the random corpus ----

  function randomCase(random: Random, index: number): Case {
    const t = tokens();
    const kind = random.int(100);
    if (kind < 30) return generateCase(random, index, random.chance(0.8) ? 'poor' : 'rich');
    if (kind < 55) return adminBodyCase(random, index);
    if (kind < 70) return jobReadCase(random, index);
    if (kind < 85) return adminQueryCase(random, index);
    // Everything else: the other routes, odd paths, missing and wrong tokens.
    const token = random.pick([t.poor, t.admin, undefined, 'mf_' + 'x'.repeat(43), '%E0%A4%A', '']);
    const path = random.pick([
      '/api/v1/models',
      '/api/v1/account',
      '/api/v1/openapi.json',
      '/healthz',
      '/metrics',
      `/media/${random.pick(oddIds(random))}`,
      `/api/v1/${random.pick(oddIds(random))}`,
      `/api/admin/v1/${random.pick(oddIds(random))}`,
      `/api/v1/models?${randomQuery(random, ['limit', 'x', '__proto__'])}`,
    ]);
    const method = random.pick(['GET', 'GET', 'POST', 'PUT', 'DELETE', 'PATCH']);
    return {
      label: `#${index} other`,
      method,
      path,
      ...(token !== undefined ? { token } : {}),
      ...(method !== 'GET' && random.chance(0.5) ? { body: randomBody(random, ['x']) } : {}),
    };
  }

  function generateCase(random: Random, index: number, who: 'poor' | 'rich'): Case {
    const video = random.chance(0.5);
    // The fields of the request bodies, in their documented order (the schemas' property order).
    const fields = Object.keys((video ? VideoGenerateBody : ImageGenerateBody).properties);
    // The rich user's bodies keep a hanging prompt, so what gets accepted never renders.
    const fixed: Array<[string, string]> =
      who === 'rich'
        ? [['prompt', JSON.stringify(`[sandbox:hang] ${random.pick(['p', '\ud800', 'é'])}`)]]
        : [];
    return {
      label: `#${index} ${who} ${video ? 'video' : 'image'}`,
      method: 'POST',
      path: video ? '/api/v1/video/vidmodel-2/generate' : '/api/v1/image/nano-banana/generate',
      token: who === 'rich' ? rich.token : poor.token,
      body: randomBody(random, fields, fixed, who === 'rich'),
    };
  }

  function adminBodyCase(random: Random, index: number): Case {
    const user = random.chance(0.85) ? target.userId : random.pick(oddIds(random));
    const key = random.chance(0.85) ? target.keyId : random.pick(oddIds(random));
    const route = random.pick([
      { method: 'POST', path: '/api/admin/v1/users', fields: ['email', 'credits'] },
      { method: 'POST', path: `/api/admin/v1/users/${user}/credits`, fields: ['amount', 'reason', 'op_id'] },
      { method: 'POST', path: `/api/admin/v1/users/${user}/keys`, fields: ['name', 'scopes'] },
      { method: 'PUT', path: `/api/admin/v1/keys/${key}/webhook`, fields: ['url'] },
      { method: 'DELETE', path: `/api/admin/v1/keys/${key}/webhook`, fields: [] },
      { method: 'DELETE', path: `/api/admin/v1/keys/${random.pick(oddIds(random))}`, fields: [] },
      { method: 'GET', path: `/api/admin/v1/users/${user}`, fields: [] },
      { method: 'GET', path: `/api/admin/v1/users/${user}/ledger`, fields: [] },
      { method: 'GET', path: `/api/admin/v1/users/${user}/keys`, fields: [] },
      { method: 'GET', path: `/api/admin/v1/keys/${key}/webhook`, fields: [] },
    ]);
    return {
      label: `#${index} admin ${route.method} ${route.fields.join(',')}`,
      method: route.method,
      path: route.path,
      token: random.chance(0.95) ? service.adminToken : poor.token,
      ...(route.method !== 'GET' && (route.fields.length > 0 || random.chance(0.2))
        ? { body: randomBody(random, route.fields) }
        : {}),
    };
  }

  function jobReadCase(random: Random, index: number): Case {
    const token = random.pick([poor.token, rich.token]);
    if (random.chance(0.5)) {
      return {
        label: `#${index} list jobs`,
        method: 'GET',
        path: `/api/v1/jobs?${randomQuery(random, ['limit', 'status', 'cursor'])}`,
        token,
      };
    }
    return {
      label: `#${index} job by odd id`,
      method: random.pick(['GET', 'DELETE']),
      path: `/api/v1/jobs/${random.pick(oddIds(random))}`,
      token,
    };
  }

  function adminQueryCase(random: Random, index: number): Case {
    const [path, names] = random.pick([
      ['/api/admin/v1/users', ['limit', 'cursor']],
      ['/api/admin/v1/audit', ['limit', 'key_id', 'kind']],
      [
        `/api/admin/v1/keys/${random.chance(0.8) ? target.keyId : random.pick(oddIds(random))}/deliveries`,
        ['limit'],
      ],
      [`/api/admin/v1/users/${target.userId}/ledger`, ['limit']],
    ] as const);
    return {
      label: `#${index} admin query`,
      method: 'GET',
      path: `${path}?${randomQuery(random, [...names])}`,
      token: service.adminToken,
    };
  }

  /** A plausible value for a field, so that bodies get past validation often enough to reach the services. */
  function validValue(random: Random, field: string, privateUrlsOnly: boolean): string {
    // Never a public host for the rich user (whose requests get as far as fetching): nothing leaves the machine.
    const urls = privateUrlsOnly
      ? [
          'https://localhost/a.png',
          'https://127.0.0.1/a.png',
          'https://0.0.0.0/a.png',
          'https://[::1]/a.png',
          `${service.url}/media/${random.pick(BROKEN_ENCODINGS)}`,
        ]
      : ['https://example.com/a.png', 'https://127.0.0.1/a.png'];
    const values: Record<string, unknown[]> = {
      ...plausibleJobValues(random, urls),
      email: [
        `fuzz-${random.int(1e9)}@example.com`,
        'fuzz-dup@example.com',
        `ü${random.int(1e6)}@example.com`,
      ],
      credits: [0, 5, 1_000_000_000],
      amount: [1, -1, 5],
      reason: ['fuzz', 'é'],
      op_id: [`op-${random.int(50)}`, 'fuzz'],
      name: ['ci', 'é'],
      scopes: [[], ['video:write'], ['models:read', 'image:write']],
      url: ['https://example.com/hook', 'https://EXAMPLE.com:443/a/../hook', ...PRIVATE_WEBHOOK_URLS],
    };
    return JSON.stringify(random.pick(values[field] ?? ['x']));
  }

  /** A body for a route with `fields`; the rich user's URLs are private ones only (nothing leaves the machine). */
  function randomBody(
    random: Random,
    fields: string[],
    fixed: Array<[string, string]> = [],
    privateUrlsOnly = false,
  ): Buffer {
    return bodyOf(random, fields, {
      plausible: (field) => validValue(random, field, privateUrlsOnly),
      odd: () => oddValue(random, privateUrlsOnly ? undefined : { ownBase: service.url }),
      fixed,
    });
  }
});
