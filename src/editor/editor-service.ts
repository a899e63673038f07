import type { ProjectRecord, ThreadRepository } from '../../actors/index.ts';
import {
  createProjectDocuments,
  type ProjectDocuments,
  type ProjectDocumentsDeps,
} from './project-documents.ts';
import { createTimelineEdits, type TimelineEdits } from './timeline-edits.ts';
import { createLibraryIntake, type LibraryIntake, type LibraryIntakeDeps } from './library-intake.ts';
import { threadMessages, type MessagesPage } from './thread-messages.ts';

/**
 * The editor's documents and direct edits (docs/editor.md, routes): projects and videos, clips, library
 * uploads and imports, and the chat threads' pages. Reads go to the repositories; every change goes through the
 * project's actor, which bumps the revision and announces it.
 */
export interface EditorService extends ProjectDocuments, TimelineEdits, LibraryIntake {
  /** One page of a video's chat thread, oldest first (404 for an unknown video). */
  messages(
    project: ProjectRecord,
    videoId: string,
    query: { limit: number; cursor?: string },
  ): Promise<MessagesPage>;
}

/** What the editor service works with. */
export type EditorServiceDeps = ProjectDocumentsDeps & LibraryIntakeDeps & { thread: ThreadRepository };

/** The editor service, assembled from its parts. */
export function createEditorService(deps: EditorServiceDeps): EditorService {
  return {
    ...createProjectDocuments(deps),
    ...createTimelineEdits(deps.commands, deps.assets),
    ...createLibraryIntake(deps),
    messages: threadMessages(deps.thread),
  };
}
