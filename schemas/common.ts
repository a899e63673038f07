import Type, { type Static, type TSchema } from 'typebox';

/** The `{ error, ...fields }` body of every error answer (docs/errors.md); extra fields may ride along. */
export const ErrorSchema = Type.Object(
  { error: Type.String({ description: 'Human-readable message, or a stable code for export errors' }) },
  { additionalProperties: true, description: 'Error answer' },
);

export type ErrorBody = Static<typeof ErrorSchema>;

/**
 * One of `values` (a JSON-Schema `anyOf` of constants), typed as their union: TypeBox infers a union mapped from
 * an array as `never`, so the static type is given here. `options` carries `default`, `errorMessage`, ...
 */
export const literalUnion = <T extends string | number>(
  values: readonly T[],
  options: Record<string, unknown> = {},
) =>
  Type.Unsafe<T>(
    Type.Union(
      values.map((value) => Type.Literal(value)),
      options,
    ),
  );

/**
 * A field the client may leave out because the checker fills in its `default`: the schema is optional (absent
 * from its object's `required`, as JSON Schema and MCP clients expect of a field with a default, docs/mcp.md),
 * while the static type, which describes the checked value, keeps the field present.
 */
export function defaulted<T extends TSchema>(schema: T): T {
  if (!('default' in schema)) throw new Error('defaulted: the schema has no default');
  return Type.Optional(schema) as unknown as T;
}

/** An object of any fields (free-form metadata, event data): typed `object`, so schema linters accept it. */
export const FreeFormObject = Type.Unsafe<Record<string, unknown>>(
  Type.Object({}, { additionalProperties: true }),
);
