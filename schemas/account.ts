import Type from 'typebox';

/** `GET /api/v1/account`. */
export const AccountResponse = Type.Object({ user_id: Type.String(), credits: Type.Integer() });

/** `GET /healthz`. */
export const HealthResponse = Type.Object({
  ok: Type.Boolean(),
  node_id: Type.String(),
  mongo: Type.Union([Type.Literal('up'), Type.Literal('down')]),
  nats: Type.Union([Type.Literal('up'), Type.Literal('down'), Type.Literal('embedded')]),
  /** Present (true) while the node shuts down (docs/deploy.md, How a node stops). */
  draining: Type.Optional(Type.Boolean()),
});

/** `GET /livez`. */
export const LivenessResponse = Type.Object({ ok: Type.Literal(true), node_id: Type.String() });
