import Type, { type Static } from 'typebox';
import { SCOPES } from './scopes.ts';
import { defaulted, literalUnion } from './common.ts';
import { KEY_NAME_MAX } from './vocabulary.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './password-rules.ts';

const scopeList = SCOPES.join(', ');

/** `POST /users` body. */
export const CreateUserBody = Type.Object({
  email: Type.String({
    pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$',
    maxLength: 254,
    errorMessage: 'email must be a valid email address',
  }),
  credits: defaulted(
    Type.Integer({
      minimum: 0,
      maximum: 1_000_000_000,
      default: 0,
      errorMessage: 'credits must be an integer from 0 to 1000000000',
    }),
  ),
});

export const UserSchema = Type.Object({ id: Type.String(), email: Type.String(), credits: Type.Integer() });
export const UserResponse = Type.Object({ user: UserSchema });
export const UsersPageResponse = Type.Object({
  users: Type.Array(UserSchema),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});

/** `GET /users` and `GET /audit` paging. */
export const ListQuery = Type.Object({
  limit: defaulted(
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 100,
      errorMessage: 'limit must be an integer from 1 to 1000',
    }),
  ),
  cursor: Type.Optional(Type.String({ minLength: 1, errorMessage: 'cursor is invalid' })),
});

/** `POST /users/<id>/credits` body. */
export const CreditGrantBody = Type.Object({
  amount: Type.Integer({
    minimum: -1_000_000_000,
    maximum: 1_000_000_000,
    errorMessage: 'amount must be a non-zero integer',
  }),
  reason: defaulted(
    Type.String({
      minLength: 1,
      maxLength: 200,
      default: 'admin_grant',
      errorMessage: 'reason must be 1 to 200 characters',
    }),
  ),
  op_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 128, errorMessage: 'op_id must be 1 to 128 characters' }),
  ),
});

export const CreditBalanceResponse = Type.Object({ user_id: Type.String(), credits: Type.Integer() });

export const LedgerEntrySchema = Type.Object({
  id: Type.String(),
  delta: Type.Integer(),
  balance_after: Type.Integer(),
  reason: Type.String(),
  op_id: Type.String(),
  job_id: Type.Optional(Type.String()),
  created_at: Type.String({ format: 'date-time' }),
});
export const LedgerResponse = Type.Object({ entries: Type.Array(LedgerEntrySchema) });

/** `POST /users/<id>/keys` body. */
export const CreateKeyBody = Type.Object({
  name: defaulted(
    Type.String({
      minLength: 1,
      maxLength: KEY_NAME_MAX,
      default: 'API key',
      errorMessage: `name must be 1 to ${KEY_NAME_MAX} characters`,
    }),
  ),
  scopes: Type.Array(literalUnion(SCOPES), {
    maxItems: SCOPES.length * 2,
    errorMessage: `scopes must be an array of: ${scopeList}`,
  }),
});

export const KeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  prefix: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  revoked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export const CreatedKeyResponse = Type.Object({
  key: Type.Omit(KeySchema, ['revoked_at']),
  api_key: Type.String(),
});
export const KeysResponse = Type.Object({ keys: Type.Array(KeySchema) });
export const RevokedKeyResponse = Type.Object({ id: Type.String(), revoked: Type.Literal(true) });

/** `PUT /keys/<id>/webhook` body. */
export const WebhookBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048, errorMessage: 'url must be a https URL' }),
});
export const WebhookSetResponse = Type.Object({ url: Type.String(), secret: Type.Optional(Type.String()) });
export const WebhookResponse = Type.Object({
  url: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
});

/** `GET /keys/<id>/deliveries` query. */
export const DeliveriesQuery = Type.Object({
  limit: defaulted(
    Type.Integer({
      minimum: 1,
      maximum: 100,
      default: 20,
      errorMessage: 'limit must be an integer from 1 to 100',
    }),
  ),
});
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);
export const WebhookAttemptSchema = Type.Object({
  attempt: Type.Integer({ minimum: 1 }),
  at: Type.String({ format: 'date-time' }),
  url: Type.String(),
  status: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  duration_ms: Type.Integer({ minimum: 0 }),
});
export const WebhookDeliverySchema = Type.Object({
  id: Type.String(),
  job_id: Type.String(),
  event: Type.String(),
  state: literalUnion(['pending', 'delivered', 'failed', 'dropped'] as const),
  attempts: Type.Array(WebhookAttemptSchema),
  next_attempt_at: Nullable(Type.String({ format: 'date-time' })),
  created_at: Type.String({ format: 'date-time' }),
});
export const DeliveriesResponse = Type.Object({ deliveries: Type.Array(WebhookDeliverySchema) });
/** `POST .../webhook/test`: the test delivery, sent once, as the delivery log shows it. */
export const TestDeliveryResponse = Type.Object({ delivery: WebhookDeliverySchema });

/** `GET /audit` query. */
export const AuditQueryParams = Type.Object({
  limit: ListQuery.properties.limit,
  key_id: Type.Optional(Type.String({ minLength: 1 })),
  kind: Type.Optional(Type.Union([Type.Literal('request'), Type.Literal('webhook_attempt')])),
});

export type CreateUserInput = Static<typeof CreateUserBody>;
export type CreditGrantInput = Static<typeof CreditGrantBody>;
export type CreateKeyInput = Static<typeof CreateKeyBody>;

/** Path parameters naming a user (an id that cannot be a user's is not found). */
export const UserParams = Type.Object({
  user_id: Type.String({ minLength: 1, maxLength: 100, errorMessage: 'User not found' }),
});

/** Path parameters naming an API key. */
export const KeyParams = Type.Object({
  key_id: Type.String({ minLength: 1, maxLength: 100, errorMessage: 'API key not found' }),
});

/** `POST /api/admin/v1/users/<id>/password` (docs/accounts.md, Passwords). */
export const PasswordBody = Type.Object({
  password: Type.String({
    minLength: PASSWORD_MIN_LENGTH,
    maxLength: PASSWORD_MAX_LENGTH,
    errorMessage: {
      minLength: `password must be at least ${PASSWORD_MIN_LENGTH} characters`,
      maxLength: `password must be at most ${PASSWORD_MAX_LENGTH} characters`,
      default: `password must be a string of at least ${PASSWORD_MIN_LENGTH} characters`,
    },
  }),
});
export const OkResponse = Type.Object({ ok: Type.Literal(true) });
