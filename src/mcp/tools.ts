import type { Model } from '../../schemas/models.ts';
import type { Clock } from '../ports/clock.ts';
import type { EventBus } from '../ports/event-bus.ts';
import type { UsersRepository } from '../ports/users-repository.ts';
import type { EditorService } from '../services/editor.ts';
import type { EditorTurns } from '../services/editor-turns.ts';
import type { ExportService } from '../services/export.ts';
import type { JobsService } from '../services/jobs.ts';
import type { McpTool } from './tool.ts';
import { jobTools } from './job-tools.ts';
import { editorTools } from './editor-tools.ts';

// The 17 tools of CONTRACT §10. Each calls the service its REST route calls, the same way: the same ownership
// checks (another user's job or project is the same 404, here a tool error), the same body schemas and rules
// (so the same validation messages), the same charges. The server (endpoint.ts) checks `scope` and `input`
// before `run`, and turns a thrown AppError into a tool error carrying its message and body fields.

/** What the tools use: the services and repositories the REST routes use. */
export interface McpToolDeps {
  /** The catalogue `GET /api/v1/models` answers (built once per process). */
  models: readonly Model[];
  jobs: Pick<JobsService, 'submitVideo' | 'submitImage' | 'get' | 'list' | 'cancel'>;
  users: Pick<UsersRepository, 'get'>;
  editor: Pick<
    EditorService,
    | 'owned'
    | 'videoOf'
    | 'createProject'
    | 'listProjects'
    | 'state'
    | 'createVideo'
    | 'importUrl'
    | 'patchProject'
  >;
  turns: Pick<EditorTurns, 'instruct'>;
  exports: Pick<ExportService, 'export'>;
  /** Whether an inbound URL is accepted: https, or the service's own media (`isAcceptedImageUrl`, as routes). */
  acceptsUrl(url: string): boolean;
  /**
   * The platform's event bus (project events on `project.<id>`), for the progress of instruct and export;
   * without it those report their start and end only.
   */
  events?: Pick<EventBus, 'subscribe'>;
  clock: Clock;
  /** How often `job_wait` reads its job (default 500 ms). */
  jobWaitPollMs?: number;
}

/** The tools of CONTRACT §10, bound to the services. */
export function createMcpTools(deps: McpToolDeps): McpTool[] {
  return [...jobTools(deps), ...editorTools(deps)];
}
