import Type, { type Static } from 'typebox';

/** The `{ error, ...fields }` body of every error answer (spec §7.1); extra fields may ride along. */
export const ErrorSchema = Type.Object(
  { error: Type.String({ description: 'Human-readable message, or a stable code for export errors' }) },
  { additionalProperties: true, description: 'Error answer' },
);

export type ErrorBody = Static<typeof ErrorSchema>;
