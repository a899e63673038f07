import Type from 'typebox';
import { createChecker } from '../../../schemas/validate.ts';
import {
  AuditQueryParams,
  CreateKeyBody,
  CreateUserBody,
  CreatedKeyResponse,
  CreditBalanceResponse,
  CreditGrantBody,
  DeliveriesQuery,
  DeliveriesResponse,
  KeysResponse,
  LedgerResponse,
  ListQuery,
  RevokedKeyResponse,
  UserResponse,
  UsersPageResponse,
  WebhookBody,
  WebhookResponse,
  WebhookSetResponse,
} from '../../../schemas/admin.ts';
import { ErrorSchema } from '../../../schemas/common.ts';
import type { AdminService } from '../../services/admin.ts';
import { readBody, readQuery } from '../json-body.ts';
import { reply, type RouteDefinition } from '../route.ts';

const BASE = '/api/admin/v1';
const admin = { kind: 'admin' } as const;
const tags = ['admin'];
const errors = {
  400: { description: 'Invalid request', schema: ErrorSchema },
  401: { description: 'Missing or wrong admin token', schema: ErrorSchema },
  404: { description: 'Unknown user or key', schema: ErrorSchema },
};

const createUser = createChecker(CreateUserBody);
const listQuery = createChecker(ListQuery);
const grant = createChecker(CreditGrantBody);
const createKey = createChecker(CreateKeyBody);
const webhook = createChecker(WebhookBody);
const auditQuery = createChecker(AuditQueryParams);
const deliveriesQuery = createChecker(DeliveriesQuery);
const NoQuery = Type.Object({});

/** The admin API of CONTRACT §3 (operators; the admin token). */
export function adminRoutes(service: AdminService): RouteDefinition[] {
  return [
    {
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
      handle: async (ctx) => reply(201, await service.createUser(await readBody(ctx, createUser))),
    },
    {
      method: 'GET',
      path: `${BASE}/users`,
      auth: admin,
      tags,
      summary: 'List users in creation order',
      query: ListQuery,
      responses: { 200: { description: 'A page of users', schema: UsersPageResponse }, ...errors },
      handle: async (ctx) => {
        const { limit, cursor } = readQuery(ctx, listQuery);
        return reply(200, await service.listUsers(limit, cursor));
      },
    },
    {
      method: 'GET',
      path: `${BASE}/users/:user_id`,
      auth: admin,
      tags,
      summary: 'Read a user',
      responses: { 200: { description: 'The user', schema: UserResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.getUser(ctx.params.user_id!)),
    },
    {
      method: 'POST',
      path: `${BASE}/users/:user_id/credits`,
      auth: admin,
      tags,
      summary: 'Grant (or take back) credits, at most once per op_id',
      body: CreditGrantBody,
      responses: {
        200: { description: 'New balance', schema: CreditBalanceResponse },
        402: { description: 'The balance would go below 0', schema: ErrorSchema },
        ...errors,
      },
      handle: async (ctx) =>
        reply(200, await service.grantCredits(ctx.params.user_id!, await readBody(ctx, grant))),
    },
    {
      method: 'GET',
      path: `${BASE}/users/:user_id/ledger`,
      auth: admin,
      tags,
      summary: "The user's credit ledger, newest first",
      query: NoQuery,
      responses: { 200: { description: 'Ledger entries', schema: LedgerResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.ledger(ctx.params.user_id!)),
    },
    {
      method: 'POST',
      path: `${BASE}/users/:user_id/keys`,
      auth: admin,
      tags,
      summary: 'Create an API key (shown once)',
      body: CreateKeyBody,
      responses: { 201: { description: 'The key and its secret', schema: CreatedKeyResponse }, ...errors },
      handle: async (ctx) =>
        reply(201, await service.createKey(ctx.params.user_id!, await readBody(ctx, createKey))),
    },
    {
      method: 'GET',
      path: `${BASE}/users/:user_id/keys`,
      auth: admin,
      tags,
      summary: "The user's API keys",
      responses: { 200: { description: 'Keys', schema: KeysResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.listKeys(ctx.params.user_id!)),
    },
    {
      method: 'DELETE',
      path: `${BASE}/keys/:key_id`,
      auth: admin,
      tags,
      summary: 'Revoke an API key',
      responses: { 200: { description: 'Revoked', schema: RevokedKeyResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.revokeKey(ctx.params.key_id!)),
    },
    {
      method: 'PUT',
      path: `${BASE}/keys/:key_id/webhook`,
      auth: admin,
      tags,
      summary: "Set the key's webhook URL (the secret is returned on first enablement only)",
      body: WebhookBody,
      responses: { 200: { description: 'Saved', schema: WebhookSetResponse }, ...errors },
      handle: async (ctx) => {
        const { url } = await readBody(ctx, webhook);
        return reply(200, await service.setWebhook(ctx.params.key_id!, url));
      },
    },
    {
      method: 'GET',
      path: `${BASE}/keys/:key_id/webhook`,
      auth: admin,
      tags,
      summary: "The key's webhook URL (never the secret)",
      responses: { 200: { description: 'Webhook', schema: WebhookResponse }, ...errors },
      handle: async (ctx) => reply(200, await service.getWebhook(ctx.params.key_id!)),
    },
    {
      method: 'DELETE',
      path: `${BASE}/keys/:key_id/webhook`,
      auth: admin,
      tags,
      summary: 'Clear the webhook (the next PUT rotates the secret)',
      responses: { 200: { description: 'Cleared' }, ...errors },
      handle: async (ctx) => reply(200, await service.clearWebhook(ctx.params.key_id!)),
    },
    {
      method: 'GET',
      path: `${BASE}/keys/:key_id/deliveries`,
      auth: admin,
      tags,
      summary: "The key's webhook deliveries with every attempt, newest first",
      query: DeliveriesQuery,
      responses: { 200: { description: 'Deliveries', schema: DeliveriesResponse }, ...errors },
      handle: async (ctx) =>
        reply(200, await service.listDeliveries(ctx.params.key_id!, readQuery(ctx, deliveriesQuery).limit)),
    },
    {
      method: 'GET',
      path: `${BASE}/audit`,
      auth: admin,
      tags,
      summary: 'Read the audit log, newest first',
      query: AuditQueryParams,
      responses: { 200: { description: 'Audit entries' }, ...errors },
      handle: async (ctx) => reply(200, await service.readAudit(readQuery(ctx, auditQuery))),
    },
  ];
}
