import {
  type Config,
  RollingWindowLimiter,
  startPeriodicTask,
  type PeriodicTask,
  type SessionGuard,
  type Feature,
  type Platform,
  MCP_PATH,
} from '../platform/index.ts';
import type { CreditLedger, UserCredits } from '../../actors/index.ts';
import type { ApiKeysRepository } from './ports/api-keys-repository.ts';
import type { OAuthStore } from './ports/oauth-store.ts';
import type { UserCredentialsRepository } from './ports/user-credentials.ts';
import type { UsersRepository } from './ports/users-repository.ts';
import type { WebSessionsRepository } from './ports/web-sessions.ts';
import { accountRoute } from './routes/account.ts';
import { createAuthenticator, type Authenticator } from './authenticator.ts';
import { createAdminService, type AdminService } from './admin-service.ts';
import type { KeyDeliveries } from './admin-keys.ts';
import { createSignInThrottle } from './sign-in-throttle.ts';
import { createWebSessions, type WebSessions } from './web-sessions.ts';
import { createOAuthServer, type OAuthServer } from './oauth/oauth-server.ts';
import { adminRoutes } from './routes/admin.ts';
import { signInRoutes } from './routes/sign-in.ts';
import { dashboardRoutes } from './routes/dashboard.ts';
import { signUpRoutes } from './routes/sign-up.ts';
import { createSessionGuard } from './session-guard.ts';
import { oauthRoutes } from './routes/oauth.ts';

/**
 * Accounts and keys: who may call (authentication, rate limits), the operators' admin API, people's sign-in
 * sessions (docs/accounts.md) and the OAuth authorization server of the MCP resource (docs/mcp.md).
 */
export interface AccountsFeature extends Feature {
  auth: Authenticator;
  admin: AdminService;
  sessions: WebSessions;
  /** Authenticates the session API's requests (the pipeline's session routes). */
  sessionGuard: SessionGuard;
  oauth: OAuthServer;
  /** Per API key, RATE_LIMIT_PER_MINUTE. */
  keyLimiter: RollingWindowLimiter;
  /** Per dashboard session (session API and bearer tokens together), DASHBOARD_RATE_PER_MINUTE. */
  sessionLimiter: RollingWindowLimiter;
  /** Per client address, AUTH_FAILURES_PER_MINUTE failed authentications. */
  authFailureLimiter: RollingWindowLimiter;
}

/** The platform and what the wiring gives the accounts slice. */
export type AccountsPlatform = Platform & {
  repositories: {
    users: UsersRepository;
    keys: ApiKeysRepository;
    credentials: UserCredentialsRepository;
    webSessions: WebSessionsRepository;
    oauth: OAuthStore;
    ledger: Pick<CreditLedger, 'entries'>;
  };
  credits: UserCredits;
  /** The webhook deliveries the admin API lists and a cleared URL drops. */
  keyDeliveries: KeyDeliveries;
};

export function accountsFeature(
  config: Pick<
    Config,
    | 'rateLimitPerMinute'
    | 'dashboardRatePerMinute'
    | 'authFailuresPerMinute'
    | 'webhookAllowPrivate'
    | 'oauthAccessTokenTtlMs'
    | 'signup'
    | 'tuning'
  >,
  platform: AccountsPlatform,
  adminToken: string,
): AccountsFeature {
  const { clock, repositories, baseUrl } = platform;
  const oauth = createOAuthServer({
    store: repositories.oauth,
    clock,
    issuer: baseUrl,
    resource: `${baseUrl}${MCP_PATH}`,
    accessTokenTtlMs: config.oauthAccessTokenTtlMs,
  });
  const throttle = createSignInThrottle(clock.now);
  const sessions = createWebSessions({
    users: repositories.users,
    credentials: repositories.credentials,
    sessions: repositories.webSessions,
    throttle,
    clock,
    onSignOutEverywhere: (userId) => oauth.revokeUser(userId),
  });
  const auth = createAuthenticator({
    keys: repositories.keys,
    adminToken,
    clock,
    accessTokens: oauth,
    sessionTokens: sessions,
  });
  const admin = createAdminService({
    users: repositories.users,
    keys: repositories.keys,
    deliveries: platform.keyDeliveries,
    ledger: repositories.ledger,
    credentials: repositories.credentials,
    credits: platform.credits,
    audit: platform.auditSink,
    auth,
    clock,
    webhookAllowPrivate: config.webhookAllowPrivate,
  });
  const keyLimiter = new RollingWindowLimiter(config.rateLimitPerMinute, clock.now);
  const sessionLimiter = new RollingWindowLimiter(config.dashboardRatePerMinute, clock.now);
  const authFailureLimiter = new RollingWindowLimiter(config.authFailuresPerMinute, clock.now);
  let sweep: PeriodicTask | undefined;
  return {
    auth,
    admin,
    sessions,
    sessionGuard: createSessionGuard(sessions, baseUrl),
    oauth,
    keyLimiter,
    sessionLimiter,
    authFailureLimiter,
    routes: [
      accountRoute(repositories.users),
      ...adminRoutes(admin),
      ...signInRoutes({ sessions, baseUrl }),
      ...dashboardRoutes({ admin, keys: repositories.keys, sessions }),
      ...signUpRoutes({
        sessions,
        baseUrl,
        admin,
        signup: config.signup,
        signupsPerMinute: config.tuning.signupsPerMinute,
        now: clock.now,
      }),
      ...oauthRoutes({
        sessions,
        baseUrl,
        oauth,
        registrationsPerMinute: config.tuning.oauthRegistrationsPerMinute,
        now: clock.now,
      }),
    ],
    async start() {
      // Windows of keys and addresses that went quiet are dropped, so memory follows the active callers.
      sweep = startPeriodicTask({
        name: 'rate-limit sweep',
        intervalMs: config.tuning.limiterSweepIntervalMs,
        logger: platform.log,
        run: () => {
          keyLimiter.sweep();
          sessionLimiter.sweep();
          authFailureLimiter.sweep();
          throttle.sweep();
        },
      });
    },
    stop: async () => sweep?.stop(),
  };
}
