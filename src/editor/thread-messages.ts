import type { MessageRecord, ProjectRecord, ThreadRepository } from '../../actors/index.ts';
import { AppError } from '../platform/index.ts';
import { videoOf } from './project-documents.ts';

/** A chat message as `GET .../messages` answers it. */
export type MessageView = Omit<MessageRecord, 'project_id' | 'video_id' | 'created_at'> & {
  created_at: string;
};

/** One page of a video's chat thread, oldest first; the cursor is opaque to callers. */
export interface MessagesPage {
  messages: MessageView[];
  next_cursor: string | null;
}

/** Reads a video's chat thread a page at a time (404 for an unknown video). */
export function threadMessages(thread: ThreadRepository) {
  return async (
    project: ProjectRecord,
    videoId: string,
    query: { limit: number; cursor?: string },
  ): Promise<MessagesPage> => {
    videoOf(project, videoId);
    const after = query.cursor ? decodeCursor(query.cursor) : undefined;
    const page = await thread.list(project.id, videoId, {
      limit: query.limit + 1,
      ...(after ? { after } : {}),
    });
    const shown = page.slice(0, query.limit);
    const last = shown.at(-1);
    return {
      messages: shown.map((message) => ({
        id: message.id,
        role: message.role,
        text: message.text,
        ...(message.image_urls ? { image_urls: message.image_urls } : {}),
        ...(message.usage ? { usage: message.usage } : {}),
        turn_id: message.turn_id,
        created_at: message.created_at.toISOString(),
      })),
      next_cursor:
        page.length > query.limit && last
          ? Buffer.from(`${last.created_at.getTime()}:${last.id}`).toString('base64url')
          : null,
    };
  };
}

function decodeCursor(cursor: string) {
  const match = /^(\d{1,15}):(msg_[0-9A-Za-z_]{1,80})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (!match) throw new AppError('bad_request', 'cursor is invalid');
  return { created_at: new Date(Number(match[1])), id: match[2]! };
}
