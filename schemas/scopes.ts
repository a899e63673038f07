/** The API key scopes (docs/api.md, Scopes). */
export const SCOPES = [
  'models:read',
  'video:write',
  'image:write',
  'video-editor:read',
  'video-editor:write',
] as const;

export type Scope = (typeof SCOPES)[number];

/** The scope every key carries, whatever it was created with. */
export const DEFAULT_SCOPE: Scope = 'models:read';

/** The scopes a key is stored with: the requested ones plus `models:read`, deduplicated, in table order. */
export function normaliseScopes(requested: readonly Scope[]): Scope[] {
  const wanted = new Set<Scope>([DEFAULT_SCOPE, ...requested]);
  return SCOPES.filter((scope) => wanted.has(scope));
}
