import Type, { type Static } from 'typebox';

/** Per-second video pricing of a video model entry (docs/api.md, GET /api/v1/models). */
export const CreditsVideoSchema = Type.Object({
  base_per_second: Type.Integer({ minimum: 0 }),
  per_second_by_resolution: Type.Object({
    '480p': Type.Integer({ minimum: 0 }),
    '720p': Type.Integer({ minimum: 0 }),
  }),
  audio_surcharge_per_second: Type.Integer({ minimum: 0 }),
  example_5s_with_audio: Type.Integer({ minimum: 0 }),
});

/** Per-image pricing of an image model entry. */
export const CreditsImageSchema = Type.Object({
  per_image: Type.Integer({ minimum: 0 }),
});

/** One accepted request field in a catalogue entry's `params` (docs/api.md, GET /api/v1/models). */
export const ModelParamSchema = Type.Object({
  type: Type.Union([
    Type.Literal('string'),
    Type.Literal('integer'),
    Type.Literal('boolean'),
    Type.Literal('array'),
  ]),
  description: Type.Optional(Type.String()),
  required: Type.Optional(Type.Boolean()),
  default: Type.Optional(
    Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Array(Type.String())]),
  ),
  allowed: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean()]))),
  min: Type.Optional(Type.Number()),
  max: Type.Optional(Type.Number()),
  min_length: Type.Optional(Type.Integer({ minimum: 0 })),
  max_length: Type.Optional(Type.Integer({ minimum: 0 })),
  format: Type.Optional(Type.String()),
  items: Type.Optional(Type.Object({ type: Type.String(), format: Type.Optional(Type.String()) })),
  min_items: Type.Optional(Type.Integer({ minimum: 0 })),
  max_items: Type.Optional(Type.Integer({ minimum: 0 })),
});

/** A catalogue entry of `GET /api/v1/models` (docs/api.md). */
export const ModelSchema = Type.Object({
  id: Type.String(),
  type: Type.Union([Type.Literal('video'), Type.Literal('image')]),
  name: Type.String(),
  provider: Type.String({ description: 'Label of the configured provider, e.g. `sandbox` or `fal`' }),
  description: Type.String(),
  capabilities: Type.Array(Type.String()),
  provider_endpoints: Type.Record(Type.String(), Type.String(), {
    description: 'Upstream endpoint id per capability',
  }),
  params: Type.Record(Type.String(), ModelParamSchema, { description: 'Accepted request fields' }),
  credits: Type.Union([CreditsVideoSchema, CreditsImageSchema]),
});

/** The answer of `GET /api/v1/models`. */
export const ModelsResponseSchema = Type.Object({ models: Type.Array(ModelSchema) });

export type CreditsVideo = Static<typeof CreditsVideoSchema>;
export type CreditsImage = Static<typeof CreditsImageSchema>;
export type ModelParam = Static<typeof ModelParamSchema>;
export type Model = Static<typeof ModelSchema>;
export type ModelsResponse = Static<typeof ModelsResponseSchema>;
