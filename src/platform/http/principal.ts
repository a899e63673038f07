import type { Scope } from '../../../schemas/scopes.ts';

/** The caller behind an API key, once authenticated. */
export interface KeyPrincipal {
  keyId: string;
  userId: string;
  scopes: readonly Scope[];
}

/** The public name of a dashboard session as a caller (`ses_…`): API key ids never start with it. */
export const SESSION_PRINCIPAL_PREFIX = 'ses_';

/** Whether the caller is a dashboard session or one of its bearer tokens, not an API key. */
export const isSessionPrincipal = (principal: KeyPrincipal): boolean =>
  principal.keyId.startsWith(SESSION_PRINCIPAL_PREFIX);
