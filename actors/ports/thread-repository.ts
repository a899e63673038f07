/** One message of a video's chat thread (docs/editor.md, Message). */
export interface MessageRecord {
  id: string;
  project_id: string;
  video_id: string;
  role: 'user' | 'assistant';
  text: string;
  image_urls?: string[];
  /** An LLM agent's reply: the tokens its turn used (docs/editor.md, The LLM agent). */
  usage?: MessageUsage;
  turn_id: string;
  created_at: Date;
}

/** Tokens an LLM turn used. */
export interface MessageUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  completions: number;
}

/** The position a page of messages continues after. */
export interface MessageCursor {
  created_at: Date;
  id: string;
}

/** Chat threads storage (port): one thread per video, ordered by `(created_at, id)`. */
export interface ThreadRepository {
  /** Stores the messages; storing an id again changes nothing (a redelivered turn end). */
  append(messages: MessageRecord[]): Promise<void>;
  /** Oldest first, after `after` when given. */
  list(
    projectId: string,
    videoId: string,
    options: { limit: number; after?: MessageCursor },
  ): Promise<MessageRecord[]>;
  /** The last `limit` messages of the thread, oldest first (what an agent reads). */
  recent(projectId: string, videoId: string, limit: number): Promise<MessageRecord[]>;
  deleteByProject(projectId: string): Promise<void>;
}
