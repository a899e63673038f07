import {
  CreateProjectBody,
  ExportResponse,
  ImportAssetBody,
  InstructBody,
  InstructResponse,
  StateResponse,
  importAssetRules,
  instructRules,
} from '../../schemas/editor.ts';
import {
  McpAddAssetInput,
  McpAssetOutput,
  McpCreateVideoInput,
  McpEmptyInput,
  McpExportInput,
  McpInstructInput,
  McpProjectListOutput,
  McpProjectOutput,
  McpStateInput,
  McpUpdateContextInput,
  McpVideoOutput,
} from '../../schemas/mcp-tools.ts';
import { createChecker } from '../../schemas/validate.ts';
import type { Scope } from '../../schemas/scopes.ts';
import {
  defineTool,
  type McpTool,
  type ToolContext,
  link,
  assetLinks,
  untilCancelled,
  progressReporter,
  checked,
} from '../platform/index.ts';
import type { EventBus, Clock } from '../platform/index.ts';
import type { EditorService } from './editor-service.ts';
import type { EditorTurns } from './turns/editor-turns.ts';
import type { VideoExporter } from './ports/video-exporter.ts';
import { eventMessage, listening } from './mcp-tool-events.ts';

/** What the editor's tools use: the services its REST routes use. */
export interface EditorToolDeps {
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
  exports: Pick<VideoExporter, 'export'>;
  /** Whether an inbound URL is accepted: https, or the service's own media (as the routes judge it). */
  acceptsUrl(url: string): boolean;
  /**
   * The platform's event bus (project events on `project.<id>`), for the progress of instruct and export;
   * without it those report their start and end only.
   */
  events?: Pick<EventBus, 'subscribe'>;
  clock: Clock;
}

// The video editor's tools (docs/mcp.md): each calls what its REST route calls, with the route's checks.

const EDITOR_READ: Scope = 'video-editor:read';
const EDITOR_WRITE: Scope = 'video-editor:write';

/** The eight video_editor_* tools. */
export function editorTools(deps: EditorToolDeps): McpTool[] {
  return [
    createProjectTool(deps),
    listProjectsTool(deps),
    getStateTool(deps),
    instructTool(deps),
    exportTool(deps),
    createVideoTool(deps),
    addAssetTool(deps),
    updateContextTool(deps),
  ];
}

/** A project, created (video_editor_create_project). */
function createProjectTool(deps: EditorToolDeps): McpTool {
  return defineTool({
    name: 'video_editor_create_project',
    title: 'Create an editor project',
    description:
      'Creates a video-editor project (with its default video). Then drive it with video_editor_instruct: describe the video you want; the agent plans, generates media and places clips one step per call, usually ending with a question. Answer it (or say "continue") with another video_editor_instruct until the timeline is right, then video_editor_export.',
    input: CreateProjectBody,
    output: McpProjectOutput,
    scope: EDITOR_WRITE,
    readOnly: false,
    run: async (ctx, input) => {
      const answer = await deps.editor.createProject(ctx.principal.userId, input);
      return {
        structured: answer,
        text: `Project ${answer.project.id} "${answer.project.name}" created (${answer.project.aspect_ratio}); next: video_editor_instruct`,
      };
    },
  });
}

/** The user's projects (video_editor_list_projects). */
function listProjectsTool(deps: EditorToolDeps): McpTool {
  return defineTool({
    name: 'video_editor_list_projects',
    title: 'List editor projects',
    description: "The user's video-editor projects (id, name, aspect ratio, last change).",
    input: McpEmptyInput,
    output: McpProjectListOutput,
    scope: EDITOR_READ,
    readOnly: true,
    run: async (ctx) => {
      const answer = await deps.editor.listProjects(ctx.principal.userId);
      return { structured: answer, text: `${answer.projects.length} project(s)` };
    },
  });
}

/** A project's state (video_editor_get_state). */
function getStateTool(deps: EditorToolDeps): McpTool {
  return defineTool({
    name: 'video_editor_get_state',
    title: 'Editor project state',
    description:
      "A project's state: the project (context included), its videos, its asset library (media URLs) and the clips of its timeline (video_id narrows the clips to one video): five tracks — video, voice, sfx, music and text (titles and captions, no asset) — each clip with its timing and its look (text and style, transition_in, motion, speed, fades; null where a field does not apply).",
    input: McpStateInput,
    output: StateResponse,
    scope: EDITOR_READ,
    readOnly: true,
    run: async (ctx, input) => {
      const answer = await deps.editor.state(ctx.principal.userId, input.project_id, input.video_id);
      return {
        structured: answer,
        text: `Project ${answer.project.id} "${answer.project.name}": ${answer.videos.length} video(s), ${answer.assets.length} asset(s), ${answer.clips.length} clip(s)`,
        links: assetLinks(answer.assets),
      };
    },
  });
}

/** One agent turn, with its events as progress (video_editor_instruct). */
function instructTool(deps: EditorToolDeps): McpTool {
  const instructBody = createChecker(InstructBody, { rules: instructRules(deps.acceptsUrl) });
  return defineTool({
    name: 'video_editor_instruct',
    title: 'Instruct the editor agent',
    description:
      'One step of the editor agent (5 credits, plus the price of any media it generates: at most one generation per step). Give an instruction (and/or up to 10 reference image_urls); the agent edits the timeline and answers in assistant_text, usually with a question: reply with the answer, or "continue", in the next call, until the timeline is right; then video_editor_export. Besides scenes it adds titles and captions ("add a title …"), transitions ("crossfade between the scenes"), motion and speed ("slow zoom on the images", "play clip 2 at half speed"), sound fades, and exports when asked ("export it"). A step takes 5 s to 5 min (progress is reported); it finishes even if this call is cancelled.',
    input: McpInstructInput,
    output: InstructResponse,
    scope: EDITOR_WRITE,
    readOnly: false,
    run: async (ctx, input) => {
      // The route's order: the project and `video_id` (404), then the body's rules (400), then the turn.
      const project = await owned(deps, ctx, input.project_id);
      if (input.video_id !== undefined) deps.editor.videoOf(project, input.video_id);
      const { project_id: _projectId, ...rest } = input;
      const body = checked(instructBody, rest);
      const progress = progressReporter(ctx);
      progress.report(0, undefined, 'turn requested');
      // The turn's id comes before any of its events: the project's other events (other turns, edits) are
      // not this call's progress.
      let turnId: string | undefined;
      let count = 0;
      const answer = await listening(
        deps.events,
        project.id,
        (event) => {
          if (turnId === undefined || event.turn_id !== turnId) return;
          count += 1;
          progress.report(count, undefined, eventMessage(event));
        },
        () =>
          untilCancelled(
            deps.turns.instruct(ctx.principal, project, body, { onStarted: (id) => (turnId = id) }),
            ctx.signal,
          ),
      );
      const done = Math.max(count + 1, progress.last + 1);
      progress.report(done, done, 'turn completed');
      await progress.settled();
      const made = [
        answer.assets_created.length > 0 ? `${answer.assets_created.length} asset(s)` : '',
        answer.clips_created.length > 0 ? `${answer.clips_created.length} clip(s)` : '',
      ].filter(Boolean);
      return {
        structured: answer,
        text: `${answer.assistant_text}\n\n(${made.length > 0 ? `created ${made.join(' and ')}` : 'nothing created'}; reply with video_editor_instruct, or export with video_editor_export)`,
        links: assetLinks(answer.assets_created),
      };
    },
  });
}

/** An export, with its encoding as progress (video_editor_export). */
function exportTool(deps: EditorToolDeps): McpTool {
  return defineTool({
    name: 'video_editor_export',
    title: 'Export a video',
    description:
      "Renders a project's video (its video, voice, sfx and music tracks, with text, transitions, motion, speed and fades) into one mp4 and returns its video_url. Takes 30 s to 3 min (progress is reported); an unchanged timeline answers its earlier export at once. fit: 'fit' letterboxes mismatched clips (default), 'fill' crops them. quality: 'final' (default) or 'preview' (360p, fast: to check a change).",
    input: McpExportInput,
    output: ExportResponse,
    scope: EDITOR_WRITE,
    readOnly: false,
    run: async (ctx, input) => {
      const project = await owned(deps, ctx, input.project_id);
      const video = deps.editor.videoOf(project, input.video_id);
      // The route's body, whatever fields it has (video_id, fit, quality).
      const { project_id: _projectId, ...body } = input;
      const progress = progressReporter(ctx);
      progress.report(0, 1, 'export requested');
      let exportId: string | undefined;
      const answer = await listening(
        deps.events,
        project.id,
        (event) => {
          if (event.video_id !== video.id || event.turn_id !== null) return;
          if (exportId === undefined && event.type === 'export.started')
            exportId = String(event.data.export_id);
          if (exportId === undefined || event.data.export_id !== exportId) return;
          if (event.type === 'export.progress') {
            const fraction = Number(event.data.fraction);
            if (Number.isFinite(fraction) && fraction < 1) progress.report(fraction, 1, 'encoding');
          }
        },
        () => untilCancelled(deps.exports.export(ctx.principal.userId, project, video, body), ctx.signal),
      );
      progress.report(1, 1, 'export completed');
      await progress.settled();
      return {
        structured: { ...answer },
        text: `Exported ${answer.duration_sec} s (${answer.video_clip_count} video clip(s), ${answer.audio_overlay_count} audio overlay(s)): ${answer.video_url}`,
        links: [link(answer.video_url, `${answer.asset_id}.mp4`, 'Exported video')],
      };
    },
  });
}

/** A video added to a project (video_editor_create_video). */
function createVideoTool(deps: EditorToolDeps): McpTool {
  return defineTool({
    name: 'video_editor_create_video',
    title: 'Add a video to a project',
    description:
      'Adds a video (its own timeline and chat thread) to a project; name defaults to "Video <n>", aspect_ratio to the project\'s. Target it with video_id in video_editor_instruct and video_editor_export.',
    input: McpCreateVideoInput,
    output: McpVideoOutput,
    scope: EDITOR_WRITE,
    readOnly: false,
    run: async (ctx, input) => {
      const project = await owned(deps, ctx, input.project_id);
      const { project_id: _projectId, ...body } = input;
      const answer = await deps.editor.createVideo(project, body, {});
      return {
        structured: answer,
        text: `Video ${answer.video.id} "${answer.video.name}" (${answer.video.aspect_ratio}) added to ${project.id}`,
      };
    },
  });
}

/** Media imported into a project's library by URL (video_editor_add_asset). */
function addAssetTool(deps: EditorToolDeps): McpTool {
  const importBody = createChecker(ImportAssetBody, { rules: importAssetRules(deps.acceptsUrl) });
  return defineTool({
    name: 'video_editor_add_asset',
    title: 'Import media into a project',
    description:
      "Imports an image, video or audio file by URL (https, or a /media URL of this service, e.g. a job's result) into a project's library, so the agent can place it: mention its id in video_editor_instruct.",
    input: McpAddAssetInput,
    output: McpAssetOutput,
    scope: EDITOR_WRITE,
    readOnly: false,
    run: async (ctx, input) => {
      const project = await owned(deps, ctx, input.project_id);
      const { project_id: _projectId, ...rest } = input;
      const body = checked(importBody, rest);
      const answer = await deps.editor.importUrl(project, body.url, body.name);
      return {
        structured: answer,
        text: `Asset ${answer.asset.id} (${answer.asset.kind}) added to ${project.id}`,
        links: assetLinks([answer.asset]),
      };
    },
  });
}

/** A project's context rewritten (video_editor_update_context). */
function updateContextTool(deps: EditorToolDeps): McpTool {
  return defineTool({
    name: 'video_editor_update_context',
    title: "Rewrite a project's context",
    description:
      "Replaces a project's context_md (up to 100 000 characters of Markdown): the brief the agent reads on every step (audience, style, characters, constraints). Read the current one with video_editor_get_state.",
    input: McpUpdateContextInput,
    output: McpProjectOutput,
    scope: EDITOR_WRITE,
    readOnly: false,
    run: async (ctx, input) => {
      const project = await owned(deps, ctx, input.project_id);
      const answer = await deps.editor.patchProject(project, { context_md: input.context_md }, {});
      return {
        structured: answer,
        text: `Context of ${answer.project.id} updated (${answer.project.context_md.length} characters, revision ${answer.project.revision})`,
      };
    },
  });
}

/** The caller's project (404 when it is not theirs), as the routes find it. */
function owned(deps: EditorToolDeps, ctx: ToolContext, projectId: string) {
  return deps.editor.owned(ctx.principal.userId, projectId);
}
