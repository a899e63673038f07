import Type from 'typebox';
import { UserSchema } from './admin.ts';

// Answers of the dashboard's session API (`/api/dashboard/v1`, docs/dashboard.md) that are its own; the keys,
// webhooks, deliveries, balance and ledger answers are the admin API's shapes (admin.ts).

/** `GET /api/dashboard/v1/session`: the signed-in user and the CSRF token every change must carry. */
export const DashboardSessionResponse = Type.Object({
  user: UserSchema,
  csrf_token: Type.String(),
  expires_at: Type.String({ format: 'date-time' }),
});

/** `POST /api/dashboard/v1/token`: a short-lived bearer token for `/api/v1` and the events WebSocket. */
export const DashboardTokenResponse = Type.Object({
  token: Type.String(),
  expires_at: Type.String({ format: 'date-time' }),
});
