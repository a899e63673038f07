import { AccountResponse } from '../../../schemas/account.ts';
import {
  AppError,
  defineRoute,
  rateLimited,
  reply,
  unauthorised,
  type RouteDefinition,
} from '../../platform/index.ts';
import type { UsersRepository } from '../ports/users-repository.ts';

/** `GET /api/v1/account` — the key's user and live balance. */
export function accountRoute(users: UsersRepository): RouteDefinition {
  return defineRoute({
    method: 'GET',
    path: '/api/v1/account',
    auth: { kind: 'key' },
    tags: ['account'],
    summary: "The key's user and credit balance",
    responses: { 200: { description: 'Account', schema: AccountResponse }, ...unauthorised, ...rateLimited },
    handle: async (ctx) => {
      const user = await users.get(ctx.principal.userId);
      if (!user) throw new AppError('not_found', 'User not found');
      return reply(200, { user_id: user.id, credits: user.credits });
    },
  });
}
