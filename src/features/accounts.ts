import type { Config } from '../config.ts';
import { RollingWindowLimiter } from '../domain/rolling-window.ts';
import { createAuthenticator, type Authenticator } from '../services/authenticator.ts';
import { createAdminService, type AdminService } from '../services/admin.ts';
import { startPeriodicTask, type PeriodicTask } from '../services/periodic-task.ts';
import { createSignInThrottle } from '../services/sign-in-throttle.ts';
import { createWebSessions, type WebSessions } from '../services/web-sessions.ts';
import { createOAuthServer, type OAuthServer } from '../services/oauth.ts';
import { adminRoutes } from '../http/routes/admin.ts';
import { accountRoute } from '../http/routes/public.ts';
import { signInRoutes } from '../http/routes/sign-in.ts';
import { dashboardRoutes } from '../http/routes/dashboard.ts';
import { signUpRoutes } from '../http/routes/sign-up.ts';
import { createSessionGuard } from '../http/session-guard.ts';
import type { SessionGuard } from '../http/pipeline.ts';
import { oauthRoutes } from '../http/routes/oauth.ts';
import { MCP_PATH } from '../http/routes/mcp.ts';
import type { Feature } from './feature.ts';
import type { Platform } from './platform.ts';

/**
 * Accounts and keys: who may call (authentication, rate limits), the operators' admin API, people's sign-in
 * sessions (CONTRACT §11) and the OAuth authorization server of the MCP resource (CONTRACT §10).
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
  platform: Platform,
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
    deliveries: repositories.deliveries,
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
