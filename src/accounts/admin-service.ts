import type { AuditEntry, AuditQuery, AuditSink } from '../platform/index.ts';
import { createAdminUsers, type AdminUsers, type AdminUsersDeps } from './admin-users.ts';
import { createAdminKeys, type AdminKeys, type AdminKeysDeps } from './admin-keys.ts';

/**
 * Operator use cases behind the admin API (docs/operator.md, admin API): users and their credits (`AdminUsers`), keys and their
 * webhooks (`AdminKeys`), and the audit log. The dashboard and sign-up reuse some of them.
 */
export interface AdminService extends AdminUsers, AdminKeys {
  /** Audit log entries matching `query`, newest first. */
  readAudit(query: AuditQuery): Promise<{ entries: AuditEntry[] }>;
}

/** What the admin service works with. */
export type AdminServiceDeps = AdminUsersDeps & AdminKeysDeps & { audit: AuditSink };

/** The admin service, assembled from its parts. */
export function createAdminService(deps: AdminServiceDeps): AdminService {
  return {
    ...createAdminUsers(deps),
    ...createAdminKeys(deps),
    readAudit: async (query) => ({ entries: await deps.audit.query(query) }),
  };
}
