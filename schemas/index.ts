export { ErrorSchema, type ErrorBody } from './common.ts';
export {
  CreditsVideoSchema,
  CreditsImageSchema,
  ModelParamSchema,
  ModelSchema,
  ModelsResponseSchema,
  type CreditsVideo,
  type CreditsImage,
  type ModelParam,
  type Model,
  type ModelsResponse,
} from './models.ts';
export * from './admin.ts';
export * from './account.ts';
export { createChecker, type Checked } from './validate.ts';
