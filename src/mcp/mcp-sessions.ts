/** One MCP session (docs/mcp.md): opened by `initialize`, bound to the API key that opened it. */
export interface McpSessionRecord {
  /** The `Mcp-Session-Id` (random, unguessable; not a credential: every request still authenticates). */
  id: string;
  key_id: string;
  user_id: string;
  /** The protocol version the client asked for at `initialize`. */
  protocol_version: string;
  created_at: Date;
  /** When a request last used it; a session idle past `MCP_SESSION_IDLE_MS` is gone. */
  last_seen_at: Date;
}

/**
 * MCP sessions storage (port), shared by every node, so a session opened on one node is used on any other
 * (no affinity).
 */
export interface McpSessionsRepository {
  create(session: McpSessionRecord): Promise<void>;
  get(id: string): Promise<McpSessionRecord | null>;
  /** Records a use (never moves `last_seen_at` back). */
  touch(id: string, at: Date): Promise<void>;
  /** Answers whether it existed. */
  delete(id: string): Promise<boolean>;
  /** Removes the sessions last seen before `before`; answers how many. */
  deleteIdle(before: Date): Promise<number>;
}
