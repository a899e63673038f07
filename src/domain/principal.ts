import type { Scope } from './scopes.ts';

/** The caller behind an API key, once authenticated. */
export interface KeyPrincipal {
  keyId: string;
  userId: string;
  scopes: readonly Scope[];
}
