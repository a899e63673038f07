import {
  CreateKeyBody,
  CreatedKeyResponse,
  CreditBalanceResponse,
  DeliveriesQuery,
  DeliveriesResponse,
  KeyParams,
  KeysResponse,
  LedgerResponse,
  RevokedKeyResponse,
  WebhookBody,
  WebhookResponse,
  WebhookSetResponse,
} from '../../../schemas/admin.ts';
import { ErrorSchema } from '../../../schemas/common.ts';
import { DashboardSessionResponse, DashboardTokenResponse } from '../../../schemas/dashboard.ts';
import {
  AppError,
  cookieOf,
  defineRoute,
  reply,
  type RequestContext,
  type RouteDefinition,
} from '../../platform/index.ts';
import type { ApiKeysRepository } from '../ports/api-keys-repository.ts';
import type { AdminService } from '../admin-service.ts';
import type { WebSessions } from '../web-sessions.ts';
import { NOT_SIGNED_IN } from '../session-guard.ts';
import { SESSION_COOKIE } from './sign-in.ts';

// The dashboard's session API (`/api/dashboard/v1`, docs/dashboard.md): the signed-in user's keys, each key's
// webhook and delivery log, the balance and ledger — through the admin service, limited to the user's own
// keys. Everything else the page does through `/api/v1` with a short-lived bearer token from `POST /token`.
// The pipeline authenticates the session (cookie; CSRF token and Origin for changes).

const BASE = '/api/dashboard/v1';
const session = { kind: 'session' } as const;
const tags = ['dashboard'];
const errors = {
  400: { description: 'Invalid request', schema: ErrorSchema },
  401: { description: 'Not signed in', schema: ErrorSchema },
  403: { description: 'A change without the CSRF token or from another origin', schema: ErrorSchema },
  404: { description: 'Not one of your keys', schema: ErrorSchema },
};

export interface DashboardRouteDeps {
  admin: AdminService;
  keys: Pick<ApiKeysRepository, 'get'>;
  sessions: WebSessions;
}

/** The dashboard's session API: the session, the user's keys, the user's credits. */
export function dashboardRoutes(deps: DashboardRouteDeps): RouteDefinition[] {
  return [...sessionRoutes(deps), ...keyRoutes(deps), ...creditRoutes(deps.admin)];
}

/** The session itself and the bearer tokens it hands out. */
function sessionRoutes(deps: DashboardRouteDeps): RouteDefinition[] {
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/session`,
      auth: session,
      tags,
      summary: 'The signed-in user, and the CSRF token every change must carry',
      responses: { 200: { description: 'The session', schema: DashboardSessionResponse }, ...errors },
      async handle(ctx) {
        const { user, session: record } = await currentSession(deps.sessions, ctx);
        return reply(
          200,
          {
            user: { id: user.id, email: user.email, credits: user.credits },
            csrf_token: record.csrf_token,
            expires_at: record.expires_at.toISOString(),
          },
          { 'cache-control': 'no-store' },
        );
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/token`,
      auth: session,
      tags,
      summary:
        'A bearer token for /api/v1 and the events socket: 15 minutes, every scope, ends with the session',
      responses: {
        200: { description: 'The token and its expiry', schema: DashboardTokenResponse },
        ...errors,
      },
      async handle(ctx) {
        const { session: record } = await currentSession(deps.sessions, ctx);
        return reply(200, await deps.sessions.issueToken(record), { 'cache-control': 'no-store' });
      },
    }),
  ];
}

/** The user's own keys, each key's webhook and its deliveries (through the admin service). */
function keyRoutes(deps: DashboardRouteDeps): RouteDefinition[] {
  const { admin } = deps;
  const owned = (ctx: RequestContext<typeof session, { key_id: string }>) => ownKey(deps.keys, ctx);
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/keys`,
      auth: session,
      tags,
      summary: 'Your API keys, newest first',
      responses: { 200: { description: 'Keys', schema: KeysResponse }, ...errors },
      async handle(ctx) {
        const { keys } = await admin.listKeys(ctx.principal.userId);
        return reply(200, { keys: keys.reverse() }); // stored oldest first; people look for the newest
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/keys`,
      auth: session,
      tags,
      summary: 'Create an API key (its secret is shown once, in this answer)',
      body: CreateKeyBody,
      responses: { 201: { description: 'The key and its secret', schema: CreatedKeyResponse }, ...errors },
      handle: async (ctx) =>
        reply(201, await admin.createKey(ctx.principal.userId, ctx.body), { 'cache-control': 'no-store' }),
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/keys/:key_id`,
      params: KeyParams,
      auth: session,
      tags,
      summary: 'Revoke one of your API keys',
      responses: { 200: { description: 'Revoked', schema: RevokedKeyResponse }, ...errors },
      handle: async (ctx) => reply(200, await admin.revokeKey(await owned(ctx))),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/keys/:key_id/webhook`,
      params: KeyParams,
      auth: session,
      tags,
      summary: "The key's webhook URL (never the secret)",
      responses: { 200: { description: 'Webhook', schema: WebhookResponse }, ...errors },
      handle: async (ctx) => reply(200, await admin.getWebhook(await owned(ctx))),
    }),
    defineRoute({
      method: 'PUT',
      path: `${BASE}/keys/:key_id/webhook`,
      params: KeyParams,
      auth: session,
      tags,
      summary: "Set the key's webhook URL (the secret is in the answer on first enablement only)",
      body: WebhookBody,
      responses: { 200: { description: 'Saved', schema: WebhookSetResponse }, ...errors },
      handle: async (ctx) =>
        reply(200, await admin.setWebhook(await owned(ctx), ctx.body.url), { 'cache-control': 'no-store' }),
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/keys/:key_id/webhook`,
      params: KeyParams,
      auth: session,
      tags,
      summary: 'Clear the webhook (the next PUT rotates the secret)',
      responses: { 200: { description: 'Cleared' }, ...errors },
      handle: async (ctx) => reply(200, await admin.clearWebhook(await owned(ctx))),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/keys/:key_id/deliveries`,
      params: KeyParams,
      auth: session,
      tags,
      summary: "The key's webhook deliveries with every attempt, newest first",
      query: DeliveriesQuery,
      responses: { 200: { description: 'Deliveries', schema: DeliveriesResponse }, ...errors },
      handle: async (ctx) => reply(200, await admin.listDeliveries(await owned(ctx), ctx.query.limit)),
    }),
  ];
}

/** The user's balance and ledger. */
function creditRoutes(admin: AdminService): RouteDefinition[] {
  return [
    defineRoute({
      method: 'GET',
      path: `${BASE}/balance`,
      auth: session,
      tags,
      summary: 'Your credit balance',
      responses: { 200: { description: 'Balance', schema: CreditBalanceResponse }, ...errors },
      async handle(ctx) {
        const { user } = await admin.getUser(ctx.principal.userId);
        return reply(200, { user_id: user.id, credits: user.credits });
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/ledger`,
      auth: session,
      tags,
      summary: 'Your credit ledger, newest first',
      responses: { 200: { description: 'Ledger entries', schema: LedgerResponse }, ...errors },
      handle: async (ctx) => reply(200, await admin.ledger(ctx.principal.userId)),
    }),
  ];
}

/** The session itself (for its CSRF token and expiry); the pipeline has checked it already. */
async function currentSession(sessions: WebSessions, ctx: RequestContext) {
  const current = await sessions.resolve(cookieOf(ctx, SESSION_COOKIE));
  if (!current) throw new AppError('unauthorized', NOT_SIGNED_IN);
  return current;
}

/** The key, when it is the signed-in user's: another user's key is as unknown as a missing one. */
async function ownKey(
  keys: DashboardRouteDeps['keys'],
  ctx: RequestContext<typeof session, { key_id: string }>,
): Promise<string> {
  const key = await keys.get(ctx.params.key_id);
  if (!key || key.user_id !== ctx.principal.userId) throw new AppError('not_found', 'API key not found');
  return key.id;
}
