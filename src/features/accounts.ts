import type { Config } from '../config.ts';
import { RollingWindowLimiter } from '../domain/rolling-window.ts';
import { createAuthenticator, type Authenticator } from '../services/authenticator.ts';
import { createAdminService, type AdminService } from '../services/admin.ts';
import { startPeriodicTask, type PeriodicTask } from '../services/periodic-task.ts';
import { adminRoutes } from '../http/routes/admin.ts';
import { accountRoute } from '../http/routes/public.ts';
import type { Feature } from './feature.ts';
import type { Platform } from './platform.ts';

/** Accounts and keys: who may call (authentication, rate limits) and the operators' admin API. */
export interface AccountsFeature extends Feature {
  auth: Authenticator;
  admin: AdminService;
  /** Per API key, RATE_LIMIT_PER_MINUTE. */
  keyLimiter: RollingWindowLimiter;
  /** Per client address, AUTH_FAILURES_PER_MINUTE failed authentications. */
  authFailureLimiter: RollingWindowLimiter;
}

export function accountsFeature(
  config: Pick<Config, 'rateLimitPerMinute' | 'authFailuresPerMinute' | 'webhookAllowPrivate' | 'tuning'>,
  platform: Platform,
  adminToken: string,
): AccountsFeature {
  const { clock, repositories } = platform;
  const auth = createAuthenticator({ keys: repositories.keys, adminToken, clock });
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
  const authFailureLimiter = new RollingWindowLimiter(config.authFailuresPerMinute, clock.now);
  let sweep: PeriodicTask | undefined;
  return {
    auth,
    admin,
    keyLimiter,
    authFailureLimiter,
    routes: [accountRoute(repositories.users), ...adminRoutes(admin)],
    async start() {
      // Windows of keys and addresses that went quiet are dropped, so memory follows the active callers.
      sweep = startPeriodicTask({
        name: 'rate-limit sweep',
        intervalMs: config.tuning.limiterSweepIntervalMs,
        logger: platform.log,
        run: () => {
          keyLimiter.sweep();
          authFailureLimiter.sweep();
        },
      });
    },
    stop: async () => sweep?.stop(),
  };
}
