// The corpus of the operator and browser families: the admin API, the dashboard's session API and pages, the
// OAuth authorization server, the MCP endpoint (JSON-RPC, every tool with hostile arguments), and odd paths.
import { SCOPES } from '../../schemas/scopes.ts';
import {
  BROKEN_ENCODINGS,
  PRIVATE_WEBHOOK_URLS,
  objectText,
  oddIds,
  oddValue,
  randomBody,
  randomQuery,
  type Random,
} from '../helpers/fuzz-values.ts';
import { WORK_TIMEOUT_MS } from './corpus-api.ts';
import type { FuzzCase } from './harness.ts';
import type { World } from './world.ts';

const ADMIN = '/api/admin/v1';
const DASH = '/api/dashboard/v1';

const plausibleAccountField = (random: Random, field: string): string =>
  JSON.stringify(
    random.pick(
      (
        {
          email: [
            `fuzz-${random.int(1e9)}@example.com`,
            'fuzz-dup@example.com',
            `ü${random.int(1e6)}@example.com`,
          ],
          credits: [0, 5, 1_000_000_000],
          amount: [1, -1, 5, -1_000_000],
          reason: ['fuzz', 'é'],
          op_id: [`op-${random.int(50)}`, 'fuzz'],
          name: ['ci', 'é', 'x'.repeat(200)],
          scopes: [[], ['video:write'], ['models:read', 'image:write'], [...SCOPES], ['admin']],
          url: [
            'https://example.com/hook',
            'https://EXAMPLE.com:443/a/../hook',
            'https://x.internal/h',
            ...PRIVATE_WEBHOOK_URLS,
          ],
          password: ['short', 'a-long-enough-password', 'x'.repeat(5000)],
        } as Record<string, unknown[]>
      )[field] ?? ['x'],
    ),
  );

/** The admin API: bodies for every route that takes one, queries for every list, odd ids everywhere. */
export function adminCase(random: Random, world: World, index: number): FuzzCase {
  const user = random.chance(0.85) ? world.target.userId : random.pick(oddIds(random));
  const key = random.chance(0.85) ? world.target.keyId : random.pick(oddIds(random));
  const route = random.pick([
    { method: 'POST', path: `${ADMIN}/users`, fields: ['email', 'credits'] },
    { method: 'POST', path: `${ADMIN}/users/${user}/credits`, fields: ['amount', 'reason', 'op_id'] },
    { method: 'POST', path: `${ADMIN}/users/${user}/keys`, fields: ['name', 'scopes'] },
    { method: 'POST', path: `${ADMIN}/users/${user}/password`, fields: ['password'] },
    { method: 'POST', path: `${ADMIN}/users/${user}/sign-in-links`, fields: [] },
    { method: 'PUT', path: `${ADMIN}/keys/${key}/webhook`, fields: ['url'] },
    { method: 'DELETE', path: `${ADMIN}/keys/${key}/webhook`, fields: [] },
    { method: 'DELETE', path: `${ADMIN}/keys/${random.pick(oddIds(random))}`, fields: [] },
    { method: 'GET', path: `${ADMIN}/users/${user}`, fields: [] },
    { method: 'GET', path: `${ADMIN}/users?${randomQuery(random, ['limit', 'cursor'])}`, fields: [] },
    { method: 'GET', path: `${ADMIN}/users/${user}/ledger?${randomQuery(random, ['limit'])}`, fields: [] },
    { method: 'GET', path: `${ADMIN}/users/${user}/keys`, fields: [] },
    { method: 'GET', path: `${ADMIN}/keys/${key}/webhook`, fields: [] },
    { method: 'GET', path: `${ADMIN}/keys/${key}/deliveries?${randomQuery(random, ['limit'])}`, fields: [] },
    { method: 'GET', path: `${ADMIN}/audit?${randomQuery(random, ['limit', 'key_id', 'kind'])}`, fields: [] },
  ]);
  const token = random.chance(0.95) ? world.adminToken : random.pick([world.poor.token, 'x'.repeat(40), '']);
  return {
    family: 'admin',
    label: `#${index} ${route.method} ${route.fields.join(',')}`,
    method: route.method,
    path: route.path,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(route.method !== 'GET' && (route.fields.length > 0 || random.chance(0.2))
      ? {
          body: randomBody(random, route.fields, {
            plausible: (field) => plausibleAccountField(random, field),
          }),
        }
      : {}),
  };
}

/** The session API with and without its cookie, CSRF token and Origin; the pages; the page's bearer token. */
export function dashboardCase(random: Random, world: World, index: number): FuzzCase {
  const { browser, csrf, bearer } = world.session;
  const roll = random.int(100);
  if (roll < 15) {
    return {
      family: 'dashboard',
      label: `#${index} page`,
      method: 'GET',
      path: random.pick([
        '/',
        '/keys',
        '/webhooks',
        '/editor',
        `/editor/${random.pick(oddIds(random))}`,
        `/assets/${random.pick(oddIds(random))}`,
        `/nope/${random.pick(BROKEN_ENCODINGS)}`,
        `/sign-in?next=${random.pick(['/', '//evil.example', '%E0%A4%A', 'javascript:alert(1)'])}`,
        '/sign-up',
        '/account',
        '/gallery',
      ]),
      headers: random.chance(0.7) ? { cookie: browser.cookieHeader() } : {},
    };
  }
  if (roll < 30) {
    return {
      family: 'dashboard',
      label: `#${index} page token on /api/v1`,
      method: random.pick(['GET', 'GET', 'POST']),
      path: random.pick([
        '/api/v1/account',
        '/api/v1/jobs',
        '/api/v1/models',
        `/api/v1/media-studio/projects/${world.scratch.id}`,
        '/api/v1/media-studio/projects',
      ]),
      headers: {
        authorization: `Bearer ${random.chance(0.9) ? bearer : `${bearer.slice(0, -2)}xx`}`,
        'content-type': 'application/json',
      },
      ...(random.chance(0.3) ? { body: randomBody(random, ['name'], { plausible: () => '"p"' }) } : {}),
    };
  }
  const keyId = random.pick(oddIds(random)); // never the world's keys: revoking them would end other families
  const route = random.pick([
    { method: 'GET', path: `${DASH}/session`, fields: [] },
    { method: 'POST', path: `${DASH}/token`, fields: [] },
    { method: 'GET', path: `${DASH}/keys`, fields: [] },
    { method: 'POST', path: `${DASH}/keys`, fields: ['name', 'scopes'] },
    { method: 'DELETE', path: `${DASH}/keys/${keyId}`, fields: [] },
    {
      method: 'PUT',
      path: `${DASH}/keys/${random.chance(0.5) ? world.editor.keyId : keyId}/webhook`,
      fields: ['url'],
    },
    {
      method: 'GET',
      path: `${DASH}/keys/${random.chance(0.5) ? world.editor.keyId : keyId}/webhook`,
      fields: [],
    },
    { method: 'DELETE', path: `${DASH}/keys/${keyId}/webhook`, fields: [] },
    {
      method: 'GET',
      path: `${DASH}/keys/${random.chance(0.5) ? world.editor.keyId : keyId}/deliveries?${randomQuery(random, ['limit', 'cursor'])}`,
      fields: [],
    },
    { method: 'GET', path: `${DASH}/balance`, fields: [] },
    { method: 'GET', path: `${DASH}/ledger?${randomQuery(random, ['limit', 'cursor'])}`, fields: [] },
  ]);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (random.chance(0.9)) headers.cookie = random.chance(0.95) ? browser.cookieHeader() : 'mf_session=forged';
  if (random.chance(0.85)) headers['x-csrf-token'] = random.chance(0.9) ? csrf : 'wrong';
  if (route.method !== 'GET') {
    const origin = random.pick([browser.origin, browser.origin, 'https://evil.example', 'null', undefined]);
    if (origin !== undefined) headers.origin = origin;
  }
  return {
    family: 'dashboard',
    label: `#${index} ${route.method} ${route.path.split('?')[0]!.replace(/\/[^/]+_[^/]+/g, '/:id')}`,
    method: route.method,
    path: route.path,
    headers,
    ...(route.fields.length > 0 || (route.method !== 'GET' && random.chance(0.2))
      ? {
          body: randomBody(random, route.fields, {
            plausible: (field) => plausibleAccountField(random, field),
          }),
        }
      : {}),
  };
}

const formText = (random: Random, fields: Record<string, string[]>): string =>
  Object.entries(fields)
    .filter(() => random.chance(0.8))
    .map(
      ([name, values]) =>
        `${name}=${random.chance(0.8) ? encodeURIComponent(random.pick(values)) : random.pick(BROKEN_ENCODINGS)}`,
    )
    .join('&');

/** Discovery, registration, authorization (with and without a session), the token and revocation endpoints. */
export function oauthCase(random: Random, world: World, index: number): FuzzCase {
  const roll = random.int(100);
  const base = { family: 'oauth' as const };
  if (roll < 10) {
    return {
      ...base,
      label: `#${index} discovery`,
      method: 'GET',
      path: random.pick([
        '/.well-known/oauth-authorization-server',
        '/.well-known/oauth-protected-resource',
        '/.well-known/oauth-protected-resource/api/mcp',
        `/.well-known/${random.pick(oddIds(random))}`,
      ]),
    };
  }
  if (roll < 30) {
    return {
      ...base,
      label: `#${index} register`,
      method: 'POST',
      path: '/oauth/register',
      headers: { 'content-type': 'application/json' },
      body: randomBody(
        random,
        [
          'redirect_uris',
          'client_name',
          'grant_types',
          'response_types',
          'token_endpoint_auth_method',
          'scope',
        ],
        {
          plausible: (field) =>
            JSON.stringify(
              field === 'redirect_uris'
                ? random.pick([
                    ['http://127.0.0.1:53682/cb'],
                    ['https://app.example/cb'],
                    ['http://evil.example/cb'],
                    ['javascript:alert(1)'],
                    [],
                    ['https://a/#frag'],
                  ])
                : field === 'grant_types'
                  ? random.pick([
                      ['authorization_code', 'refresh_token'],
                      ['client_credentials'],
                      ['implicit'],
                    ])
                  : field === 'token_endpoint_auth_method'
                    ? random.pick(['none', 'client_secret_basic', 'private_key_jwt'])
                    : random.pick(['fuzz', 'video:write', 'x'.repeat(3000)]),
            ),
        },
      ),
    };
  }
  const authorizeFields = {
    response_type: ['code', 'token', ''],
    client_id: [world.oauthClientId, 'cli_nope', ''],
    redirect_uri: [
      'http://127.0.0.1:53682/callback',
      'http://127.0.0.1:53682/other',
      'https://evil.example/',
    ],
    code_challenge: ['E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', 'short', ''],
    code_challenge_method: ['S256', 'plain', ''],
    scope: ['video:write image:write', 'admin', ''],
    state: ['s', 'x'.repeat(3000)],
    resource: [`${world.baseUrl}/api/mcp`, 'https://elsewhere.example/api/mcp'],
  };
  if (roll < 55) {
    const post = random.chance(0.3);
    return {
      ...base,
      label: `#${index} authorize ${post ? 'consent' : 'page'}`,
      method: post ? 'POST' : 'GET',
      path: `/oauth/authorize${post ? '' : `?${formText(random, authorizeFields)}`}`,
      headers: {
        ...(random.chance(0.6) ? { cookie: world.session.browser.cookieHeader() } : {}),
        ...(post
          ? {
              'content-type': 'application/x-www-form-urlencoded',
              origin: random.pick([world.session.browser.origin, 'https://evil.example']),
            }
          : {}),
      },
      ...(post
        ? {
            body: Buffer.from(
              formText(random, {
                ...authorizeFields,
                csrf_token: ['x', world.session.csrf],
                decision: ['allow', 'deny'],
                scopes: ['video:write'],
              }),
            ),
          }
        : {}),
    };
  }
  const revoke = roll >= 85;
  const fields: Record<string, string[]> = revoke
    ? { token: ['x', 'mfat_x', 'mfrt_x', ''], token_type_hint: ['access_token', 'refresh_token', 'x'] }
    : {
        grant_type: ['authorization_code', 'refresh_token', 'client_credentials', 'password', ''],
        code: ['x', 'mfc_' + 'a'.repeat(40)],
        redirect_uri: authorizeFields.redirect_uri,
        code_verifier: ['dBjftJeZ4CVP-mJ92K5Zzp6QrjbyA7yYXbGNn9BdxxY', 'x'],
        client_id: authorizeFields.client_id,
        refresh_token: ['mfrt_x', ''],
        resource: authorizeFields.resource,
      };
  const asJson = random.chance(0.15);
  return {
    ...base,
    label: `#${index} ${revoke ? 'revoke' : 'token'}`,
    method: random.chance(0.95) ? 'POST' : 'GET',
    path: revoke ? '/oauth/revoke' : '/oauth/token',
    headers: {
      'content-type': asJson
        ? 'application/json'
        : random.pick([
            'application/x-www-form-urlencoded',
            'application/x-www-form-urlencoded; charset=utf-8',
            'text/plain',
          ]),
    },
    body: asJson
      ? randomBody(random, Object.keys(fields), { plausible: () => '"x"' })
      : Buffer.from(formText(random, fields)),
  };
}

/** The MCP tools and the fields of their inputs (docs/mcp.md). */
const MCP_TOOLS: Record<string, string[]> = {
  list_models: [],
  estimate_cost: ['model', 'duration_seconds', 'resolution', 'fast', 'generate_audio', 'num_images'],
  media_forge_generate: [
    'model',
    'prompt',
    'duration_seconds',
    'resolution',
    'image_url',
    'image_urls',
    'num_images',
  ],
  job_status: ['job_id'],
  job_wait: ['job_id', 'timeout_seconds'],
  job_cancel: ['job_id'],
  list_jobs: ['limit', 'status', 'cursor'],
  get_account: [],
  video_prompt_guide: [],
  video_editor_create_project: ['name', 'description', 'aspect_ratio'],
  video_editor_list_projects: [],
  video_editor_get_state: ['project_id', 'video_id'],
  video_editor_instruct: ['project_id', 'instruction', 'image_urls', 'video_id'],
  video_editor_export: ['project_id', 'video_id', 'fit'],
  video_editor_create_video: ['project_id', 'name', 'aspect_ratio'],
  video_editor_add_asset: ['project_id', 'url', 'name'],
  video_editor_update_context: ['project_id', 'context_md'],
};

function plausibleToolField(random: Random, world: World, field: string): string {
  const values: Record<string, unknown[]> = {
    model: ['vidmodel-2.0', 'vidmodel-2.0-fast', 'imgmodel-2', 'nope'],
    prompt: ['[sandbox:fail] a fox', 'a fox'],
    duration_seconds: [4, 5, 7],
    resolution: ['480p', '720p'],
    num_images: [1, 9],
    job_id: ['job_00000000000000', 'nope'],
    timeout_seconds: [1, 2, 0, 601],
    limit: [1, 100, 101],
    project_id: [world.scratch.id, 'prj_nope'],
    video_id: [world.scratch.videoId, 'vid_nope'],
    instruction: ['continue', 'remove clip 1', 'x'.repeat(8001)],
    image_urls: [[], ['https://printer.local/a.png'], [world.ownImageUrl]],
    image_url: ['https://localhost/a.png', world.ownImageUrl],
    url: [world.ownImageUrl, 'https://db.internal/a.png'],
    fit: ['fit', 'fill', 'stretch'],
    aspect_ratio: ['16:9', '4:5', '2:1'],
    context_md: ['# c', ''],
  };
  return JSON.stringify(random.pick(values[field] ?? ['x']));
}

/** JSON-RPC to /api/mcp: every tool with hostile arguments, other methods, broken envelopes and headers. */
export function mcpCase(random: Random, world: World, index: number): FuzzCase {
  const headers: Record<string, string> = {
    'content-type': random.chance(0.95) ? 'application/json' : 'text/plain',
    accept: random.chance(0.9)
      ? 'application/json, text/event-stream'
      : random.pick(['application/json', '*/*', 'text/html']),
  };
  if (random.chance(0.95))
    headers.authorization = `Bearer ${random.chance(0.95) ? world.editor.token : 'mf_nope'}`;
  if (random.chance(0.9))
    headers['mcp-session-id'] = random.chance(0.9)
      ? world.mcpSession
      : random.pick(['mcps_nope', 'x'.repeat(300)]);
  if (random.chance(0.05)) headers.origin = 'https://evil.example';
  const tool = random.pick(Object.keys(MCP_TOOLS));
  const roll = random.int(100);
  let body: Buffer;
  if (roll < 70) {
    const args = randomBody(random, MCP_TOOLS[tool]!, {
      plausible: (field) => plausibleToolField(random, world, field),
      odd: () => oddValue(random, { ownBase: world.baseUrl }),
    }).toString('utf8');
    const argsJson = (() => {
      try {
        JSON.parse(args);
        return args;
      } catch {
        return JSON.stringify(args); // a string where an object belongs
      }
    })();
    body = Buffer.from(
      objectText([
        ['jsonrpc', '"2.0"'],
        ['id', String(index)],
        ['method', '"tools/call"'],
        [
          'params',
          objectText([
            ['name', JSON.stringify(random.chance(0.95) ? tool : 'no_such_tool')],
            ['arguments', argsJson],
          ]),
        ],
      ]),
    );
  } else if (roll < 85) {
    body = Buffer.from(
      JSON.stringify({
        jsonrpc: '2.0',
        id: random.pick([index, 'x', null, 1.5, {}]),
        method: random.pick([
          'tools/list',
          'ping',
          'resources/list',
          'prompts/list',
          'initialize',
          'notifications/initialized',
          'notifications/cancelled',
          'nope',
          '',
        ]),
        params: random.pick([{}, [], null, { cursor: '%zz' }, undefined]),
      }),
    );
  } else {
    body = Buffer.from(
      random.pick([
        '',
        '[]',
        '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]',
        '{"jsonrpc":"1.0"}',
        '{',
        'null',
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job_wait","arguments":{"job_id":"x","timeout_seconds":1e309}}}',
      ]),
    );
  }
  const long = tool === 'video_editor_instruct' || tool === 'video_editor_export' || tool === 'job_wait';
  const method = random.chance(0.95) ? 'POST' : random.pick(['GET', 'DELETE', 'PUT']);
  // A DELETE ends the session it names, and a GET opens its event stream, which rightly stays open: neither
  // names the world's session, which every other MCP case uses.
  if (method !== 'POST') headers['mcp-session-id'] = 'mcps_not_the_worlds_session';
  return {
    family: 'mcp',
    label: `#${index} ${roll < 70 ? tool : 'rpc'}`,
    method,
    path: '/api/mcp',
    headers,
    body,
    ...(long ? { timeoutMs: WORK_TIMEOUT_MS } : {}),
  };
}

/** Everything else: odd paths and methods, media with hostile ranges, probes and metrics with odd tokens. */
export function otherCase(random: Random, world: World, index: number): FuzzCase {
  const token = random.pick([
    world.poor.token,
    world.adminToken,
    undefined,
    'mf_' + 'x'.repeat(43),
    '%E0%A4%A',
    '',
  ]);
  const media = world.ownImageUrl.slice(world.baseUrl.length);
  const path = random.pick([
    '/api/v1/models',
    '/api/v1/account',
    '/api/v1/openapi.json',
    '/healthz',
    '/livez',
    '/metrics',
    media,
    `/media/${random.pick(oddIds(random))}`,
    `/api/v1/${random.pick(oddIds(random))}`,
    `/api/admin/v1/${random.pick(oddIds(random))}`,
    `/api/v1/models?${randomQuery(random, ['limit', 'x', '__proto__'])}`,
  ]);
  const method = random.pick(['GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
  const headers: Record<string, string> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (path === media || random.chance(0.05))
    headers.range = random.pick([
      'bytes=0-0',
      'bytes=-1',
      'bytes=5-2',
      'bytes=0-',
      'bytes=99999999-',
      'bytes=0-1,2-3',
      'bytes=x',
      'items=0-1',
      `bytes=0-${'9'.repeat(30)}`,
    ]);
  return {
    family: 'other',
    label: `#${index} ${method}`,
    method,
    path,
    headers,
    ...(method !== 'GET' && method !== 'HEAD' && random.chance(0.5)
      ? { body: randomBody(random, ['x'], { plausible: () => '1' }) }
      : {}),
  };
}
