import { newId, type Clock } from '../../platform/index.ts';
import type { OAuthClientRecord, OAuthStore } from '../ports/oauth-store.ts';
import { OAuthError } from './oauth-error.ts';
import { MAX_REDIRECT_URIS, redirectUriProblem } from './oauth-terms.ts';

const MAX_CLIENT_NAME = 200;

/**
 * RFC 7591 dynamic registration of a public client: its redirect URIs checked, its name bounded. Answers the
 * registered client's metadata (201).
 */
export async function registerClient(
  store: Pick<OAuthStore, 'createClient'>,
  clock: Clock,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const uris = body.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0) {
    throw new OAuthError('invalid_client_metadata', 'redirect_uris must be a non-empty array of URLs');
  }
  if (!uris.every((uri) => typeof uri === 'string')) {
    throw new OAuthError('invalid_redirect_uri', 'Every redirect URI must be a string');
  }
  if (uris.length > MAX_REDIRECT_URIS) {
    throw new OAuthError('invalid_client_metadata', `At most ${MAX_REDIRECT_URIS} redirect_uris`);
  }
  for (const uri of uris as string[]) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthError('invalid_redirect_uri', problem);
  }
  const name = typeof body.client_name === 'string' ? body.client_name.trim() : '';
  if (name.length > MAX_CLIENT_NAME) {
    throw new OAuthError(
      'invalid_client_metadata',
      `client_name must be at most ${MAX_CLIENT_NAME} characters`,
    );
  }
  const client: OAuthClientRecord = {
    id: newId('mfc', 24),
    name: name || 'Unnamed client',
    redirect_uris: uris as string[],
    created_at: new Date(clock.now()),
  };
  await store.createClient(client);
  // Every client is public: whatever method was asked for, the answer says `none` (RFC 7591 §3.2.1 lets
  // the server replace requested values) and PKCE stands in for a secret.
  return {
    client_id: client.id,
    client_id_issued_at: Math.floor(client.created_at.getTime() / 1000),
    client_name: client.name,
    redirect_uris: client.redirect_uris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

/** The registered client a token or revocation request names (`client_id`), or `invalid_client` (401). */
export async function clientOf(
  store: Pick<OAuthStore, 'getClient'>,
  form: URLSearchParams,
): Promise<OAuthClientRecord> {
  const clientId = form.get('client_id');
  const client = clientId ? await store.getClient(clientId) : null;
  if (!client) throw new OAuthError('invalid_client', 'Unknown client_id', 401);
  return client;
}
