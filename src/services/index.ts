export { createAdminService, assertWebhookUrl, type AdminService } from './admin.ts';
export { createAuditLog, type AuditLog } from './audit-log.ts';
export {
  createAuthenticator,
  MISSING_AUTHORIZATION,
  INVALID_KEY,
  type Authenticator,
} from './authenticator.ts';
