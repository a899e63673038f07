import { KeyParams, TestDeliveryResponse } from '../../schemas/admin.ts';
import { ErrorSchema } from '../../schemas/common.ts';
import { AppError, defineRoute, reply, type RouteDefinition } from '../platform/index.ts';
import type { ApiKeysRepository } from '../accounts/index.ts';
import { deliveryView } from './delivery-view.ts';
import type { Webhooks } from './webhooks-service.ts';

// "Send test delivery" (docs/webhooks.md "Test deliveries"): for the signed-in user's own keys through the
// session API (CSRF token and Origin, as every change there), and for any key through the admin API.

const responses = {
  200: { description: 'The test delivery as the delivery log shows it', schema: TestDeliveryResponse },
  404: { description: 'Unknown key', schema: ErrorSchema },
  409: { description: 'The key has no webhook URL, or a test of it is under way', schema: ErrorSchema },
};
const summary = 'Sign and send one sample job.completed event (`"test": true`) to the key\'s webhook';

export function webhookTestRoutes(deps: {
  webhooks: Pick<Webhooks, 'sendTest'>;
  keys: Pick<ApiKeysRepository, 'get'>;
}): RouteDefinition[] {
  const sendTest = async (keyId: string) =>
    reply(
      200,
      { delivery: deliveryView(await deps.webhooks.sendTest(keyId)) },
      { 'cache-control': 'no-store' },
    );
  return [
    defineRoute({
      method: 'POST',
      path: '/api/dashboard/v1/keys/:key_id/webhook/test',
      params: KeyParams,
      auth: { kind: 'session' },
      tags: ['dashboard'],
      summary,
      responses: {
        ...responses,
        401: { description: 'Not signed in', schema: ErrorSchema },
        403: { description: 'Without the CSRF token or from another origin', schema: ErrorSchema },
      },
      async handle(ctx) {
        // Another user's key is as unknown as a missing one.
        const key = await deps.keys.get(ctx.params.key_id);
        if (!key || key.user_id !== ctx.principal.userId)
          throw new AppError('not_found', 'API key not found');
        return sendTest(key.id);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/api/admin/v1/keys/:key_id/webhook/test',
      params: KeyParams,
      auth: { kind: 'admin' },
      tags: ['admin'],
      summary,
      responses: {
        ...responses,
        401: { description: 'Missing or wrong admin token', schema: ErrorSchema },
      },
      handle: (ctx) => sendTest(ctx.params.key_id),
    }),
  ];
}
