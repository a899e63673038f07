import Type, { type Static } from 'typebox';

/** The `{ error, ...fields }` body of every error answer (spec §7.1); extra fields may ride along. */
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
