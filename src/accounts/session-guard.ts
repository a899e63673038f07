import { AppError, cookieOf, type SessionGuard } from '../platform/index.ts';
import type { WebSessions } from './web-sessions.ts';
import { sessionPrincipal } from './session-tokens.ts';
import { SESSION_COOKIE } from './routes/sign-in.ts';

export const NOT_SIGNED_IN = 'Not signed in';

/**
 * The session API's authentication (docs/dashboard.md): the session cookie; a request that changes something
 * must also carry the session's CSRF token in `X-CSRF-Token` and come from our own `Origin` (a page elsewhere
 * can make the browser send the cookie, never read the token).
 */
export function createSessionGuard(sessions: WebSessions, baseUrl: string): SessionGuard {
  const ownOrigin = new URL(baseUrl).origin;
  return {
    async authenticate(headers, method) {
      const current = await sessions.resolve(cookieOf({ headers }, SESSION_COOKIE));
      if (!current) throw new AppError('unauthorized', NOT_SIGNED_IN);
      if (method !== 'GET' && method !== 'HEAD') {
        if (headers.origin !== ownOrigin) {
          throw new AppError(
            'forbidden',
            'A change must come from this site: the Origin header is missing or foreign',
          );
        }
        if (!sessions.csrfMatches(current.session, headers['x-csrf-token'])) {
          throw new AppError('forbidden', 'Missing or wrong X-CSRF-Token header');
        }
      }
      return sessionPrincipal(current.session);
    },
  };
}
