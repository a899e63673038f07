import {
  type Config,
  startPeriodicTask,
  type PeriodicTask,
  type Feature,
  type Platform,
  VERSION,
} from '../platform/index.ts';
import type { UsersRepository } from '../accounts/index.ts';
import { createMongoMcpSessions } from './mongo-sessions.ts';
import { mcpRoutes } from './route.ts';
import { createMcpEndpoint } from './endpoint.ts';
import { createMcpTools, type McpToolDeps } from './tools.ts';
import { isAcceptedImageUrl, buildModelsCatalog } from '../jobs/index.ts';

/** What `initialize` tells an AI client about working with MediaForge. */
export const MCP_INSTRUCTIONS = `MediaForge generates videos and images and edits multi-scene videos.

Generating media: call media_forge_generate (model vidmodel-2.0, vidmodel-2.0-fast or imgmodel-2; estimate_cost first if the user cares about credits; video_prompt_guide shows how to write a video prompt), then job_wait with the job_id until the job is completed; its media are in the result as links. job_status reads a job once, job_cancel refunds a job still processing.

Editing a video: video_editor_create_project, then video_editor_instruct with what the user wants ("a 3-scene vertical video about ..."). The editor's agent does one step per call and usually ends with a question: pass the user's answer, or "continue", to video_editor_instruct again until the timeline is right, then video_editor_export for one mp4 (its video_url; quality "preview" renders a quick 360p check). The agent also adds titles and captions, transitions, motion, speed and sound fades when asked ("add a title ...", "crossfade between the scenes", "slow zoom on the images"). video_editor_get_state shows the timeline; video_editor_add_asset imports media by URL.

Credits: get_account shows the balance. Every editor turn costs 5 credits plus the media it generates.`;

/**
 * The MCP server (docs/mcp.md) at `/api/mcp`: the 17 tools over the same services as REST, sessions kept in
 * MongoDB (any node serves any session), idle sessions swept.
 */
/** The platform and what the wiring gives the MCP slice. */
export type McpPlatform = Platform & { repositories: { users: UsersRepository } };

export async function mcpFeature(
  config: Pick<Config, 'mcpSessionIdleMs' | 'provider' | 'providerEndpoints'>,
  platform: McpPlatform,
  services: Pick<McpToolDeps, 'jobs' | 'editor' | 'turns' | 'exports'>,
): Promise<Feature> {
  const sessions = await createMongoMcpSessions(platform.mongo.db);
  const endpoint = createMcpEndpoint({
    tools: createMcpTools({
      ...services,
      models: buildModelsCatalog({ provider: config.provider, endpoints: config.providerEndpoints }),
      users: platform.repositories.users,
      acceptsUrl: (url) => isAcceptedImageUrl(url, platform.baseUrl),
      events: platform.events,
      clock: platform.clock,
    }),
    sessions,
    clock: platform.clock,
    idleMs: config.mcpSessionIdleMs,
    origin: new URL(platform.baseUrl).origin,
    instructions: MCP_INSTRUCTIONS,
    version: VERSION,
    log: platform.log,
    bus: platform.events,
  });
  let sweep: PeriodicTask | undefined;
  return {
    routes: mcpRoutes(endpoint, { baseUrl: platform.baseUrl }),
    async start() {
      sweep = startPeriodicTask({
        name: 'MCP session sweep',
        intervalMs: Math.max(1000, Math.floor(config.mcpSessionIdleMs / 4)),
        logger: platform.log,
        run: async () => {
          await sessions.deleteIdle(new Date(platform.clock.now() - config.mcpSessionIdleMs));
        },
      });
    },
    // Open event streams never end by themselves: they close first, and their clients reconnect elsewhere.
    async drain() {
      endpoint.drain();
    },
    async stop() {
      await sweep?.stop();
      endpoint.drain();
      endpoint.close();
    },
  };
}
