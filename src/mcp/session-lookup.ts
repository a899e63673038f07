import type { Clock, KeyPrincipal } from '../platform/index.ts';
import type { McpSessionRecord, McpSessionsRepository } from './mcp-sessions.ts';

/** A session is read from the database at most this often per node (a deletion elsewhere shows within it). */
const SESSION_CACHE_MS = 5000;
/** `last_seen_at` is written at most this often per session, and at most every quarter of the idle time. */
const TOUCH_EVERY_MS = 30_000;

/** The MCP sessions as this node sees them: read through a short cache, their use recorded sparingly. */
export interface SessionLookup {
  /** The session when it exists, belongs to this key and is not idle; its use is recorded. */
  sessionOf(id: string, principal: KeyPrincipal): Promise<McpSessionRecord | null>;
  /** Forgets a session that ended (here or on another node). */
  forget(id: string): void;
}

/** Sessions kept in storage (any node serves any session), cached per node, gone once idle `idleMs`. */
export function createSessionLookup(options: {
  sessions: McpSessionsRepository;
  clock: Clock;
  idleMs: number;
}): SessionLookup {
  const { sessions, clock } = options;
  /** Sessions this node used lately: when it read them, when they were last used, when that was last written. */
  const cache = new Map<
    string,
    { session: McpSessionRecord; readAt: number; seenAt: number; writtenAt: number }
  >();
  const touchEveryMs = Math.min(TOUCH_EVERY_MS, Math.floor(options.idleMs / 4));

  return {
    async sessionOf(id, principal) {
      const now = clock.now();
      let cached = cache.get(id);
      if (!cached || now - cached.readAt > SESSION_CACHE_MS) {
        const session = await sessions.get(id);
        if (!session) {
          cache.delete(id);
          return null;
        }
        const stored = session.last_seen_at.getTime();
        const seenAt = Math.max(stored, cached?.seenAt ?? 0);
        cached = { session, readAt: now, seenAt, writtenAt: Math.max(stored, cached?.writtenAt ?? 0) };
        cache.set(id, cached);
      }
      const { session } = cached;
      if (session.key_id !== principal.keyId) return null;
      if (now - cached.seenAt > options.idleMs) {
        cache.delete(id);
        await sessions.delete(id);
        return null;
      }
      cached.seenAt = now;
      if (now - cached.writtenAt > touchEveryMs) {
        cached.writtenAt = now;
        await sessions.touch(id, new Date(now));
      }
      return session;
    },

    forget(id) {
      cache.delete(id);
    },
  };
}
