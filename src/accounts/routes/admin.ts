import {
  AuditQueryParams,
  CreateKeyBody,
  CreateUserBody,
  CreatedKeyResponse,
  CreditBalanceResponse,
  CreditGrantBody,
  PasswordBody,
  OkResponse,
  DeliveriesQuery,
  DeliveriesResponse,
  KeyParams,
  KeysResponse,
  LedgerResponse,
  ListQuery,
  RevokedKeyResponse,
  UserParams,
  UserResponse,
  UsersPageResponse,
  WebhookBody,
  WebhookResponse,
  WebhookSetResponse,
} from '../../../schemas/admin.ts';
import { ErrorSchema } from '../../../schemas/common.ts';
import type { AdminService } from '../admin-service.ts';
import { defineRoute, reply, type RouteDefinition } from '../../platform/index.ts';

const BASE = '/api/admin/v1';
const admin = { kind: 'admin' } as const;
const tags = ['admin'];
const errors = {
  400: { description: 'Invalid request', schema: ErrorSchema },
  401: { description: 'Missing or wrong admin token', schema: ErrorSchema },
  404: { description: 'Unknown user or key', schema: ErrorSchema },
};

/** The admin API (docs/operator.md; operators, the admin token): users, then keys, then the audit log. */
export function adminRoutes(service: AdminService): RouteDefinition[] {
  return [...userRoutes(service), ...keyRoutes(service), auditRoute(service)];
}

/** Users: create, list and read them, grant credits, set a password, read the ledger. */
function userRoutes(service: AdminService): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: `${BASE}/users`,
      auth: admin,
      tags,
      summary: 'Create a user',
      body: CreateUserBody,
      responses: {
        201: { description: 'Created', schema: UserResponse },
        409: { description: 'Email exists' },
        ...errors,
      },
      handle: async (ctx) => reply(201, await service.createUser(ctx.body)),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/users`,
      auth: admin,
      tags,
      summary: 'List users in creation order',
      query: ListQuery,
      responses: { 200: { description: 'A page of users', schema: UsersPageResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.listUsers(ctx.query.limit, ctx.query.cursor)),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/users/:user_id`,
      params: UserParams,
      auth: admin,
      tags,
      summary: 'Read a user',
      responses: { 200: { description: 'The user', schema: UserResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.getUser(ctx.params.user_id)),
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/users/:user_id/credits`,
      params: UserParams,
      auth: admin,
      tags,
      summary: 'Grant (or take back) credits, at most once per op_id',
      body: CreditGrantBody,
      responses: {
        200: { description: 'New balance', schema: CreditBalanceResponse },
        402: { description: 'The balance would go below 0', schema: ErrorSchema },
        ...errors,
      },
      handle: async (ctx) => reply(200, await service.grantCredits(ctx.params.user_id, ctx.body)),
    }),
    defineRoute({
      method: 'POST',
      path: `${BASE}/users/:user_id/password`,
      params: UserParams,
      auth: admin,
      tags,
      summary: "Set the user's sign-in password (stored as a scrypt hash)",
      body: PasswordBody,
      responses: { 200: { description: 'Set', schema: OkResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.setPassword(ctx.params.user_id, ctx.body.password)),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/users/:user_id/ledger`,
      params: UserParams,
      auth: admin,
      tags,
      summary: "The user's credit ledger, newest first",
      responses: { 200: { description: 'Ledger entries', schema: LedgerResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.ledger(ctx.params.user_id)),
    }),
  ];
}

/** A user's API keys, and each key's revocation, webhook and deliveries. */
function keyRoutes(service: AdminService): RouteDefinition[] {
  return [
    defineRoute({
      method: 'POST',
      path: `${BASE}/users/:user_id/keys`,
      params: UserParams,
      auth: admin,
      tags,
      summary: 'Create an API key (shown once)',
      body: CreateKeyBody,
      responses: { 201: { description: 'The key and its secret', schema: CreatedKeyResponse }, ...errors },
      handle: async (ctx) => reply(201, await service.createKey(ctx.params.user_id, ctx.body)),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/users/:user_id/keys`,
      params: UserParams,
      auth: admin,
      tags,
      summary: "The user's API keys",
      responses: { 200: { description: 'Keys', schema: KeysResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.listKeys(ctx.params.user_id)),
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/keys/:key_id`,
      params: KeyParams,
      auth: admin,
      tags,
      summary: 'Revoke an API key',
      responses: { 200: { description: 'Revoked', schema: RevokedKeyResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.revokeKey(ctx.params.key_id)),
    }),
    defineRoute({
      method: 'PUT',
      path: `${BASE}/keys/:key_id/webhook`,
      params: KeyParams,
      auth: admin,
      tags,
      summary: "Set the key's webhook URL (the secret is returned on first enablement only)",
      body: WebhookBody,
      responses: { 200: { description: 'Saved', schema: WebhookSetResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.setWebhook(ctx.params.key_id, ctx.body.url)),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/keys/:key_id/webhook`,
      params: KeyParams,
      auth: admin,
      tags,
      summary: "The key's webhook URL (never the secret)",
      responses: { 200: { description: 'Webhook', schema: WebhookResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.getWebhook(ctx.params.key_id)),
    }),
    defineRoute({
      method: 'DELETE',
      path: `${BASE}/keys/:key_id/webhook`,
      params: KeyParams,
      auth: admin,
      tags,
      summary: 'Clear the webhook (the next PUT rotates the secret)',
      responses: { 200: { description: 'Cleared' }, ...errors },
      handle: async (ctx) => reply(200, await service.clearWebhook(ctx.params.key_id)),
    }),
    defineRoute({
      method: 'GET',
      path: `${BASE}/keys/:key_id/deliveries`,
      params: KeyParams,
      auth: admin,
      tags,
      summary: "The key's webhook deliveries with every attempt, newest first",
      query: DeliveriesQuery,
      responses: { 200: { description: 'Deliveries', schema: DeliveriesResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.listDeliveries(ctx.params.key_id, ctx.query.limit)),
    }),
  ];
}

/** The audit log. */
function auditRoute(service: AdminService): RouteDefinition {
  return defineRoute({
    method: 'GET',
    path: `${BASE}/audit`,
    auth: admin,
    tags,
    summary: 'Read the audit log, newest first',
    query: AuditQueryParams,
    responses: { 200: { description: 'Audit entries' }, ...errors },
    handle: async (ctx) => reply(200, await service.readAudit(ctx.query)),
  });
}
