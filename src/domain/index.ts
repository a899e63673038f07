export { AppError, ERROR_STATUS, type ErrorCode } from './errors.ts';

export { newId, randomBase62 } from './ids.ts';
export { SCOPES, DEFAULT_SCOPE, normaliseScopes, type Scope } from './scopes.ts';
export { generateApiKey, hashApiKey, isWellFormedApiKey, displayPrefix, secretsEqual } from './api-key.ts';

export { RollingWindowLimiter, type WindowDecision } from './rolling-window.ts';
export * from './models-catalog.ts';
