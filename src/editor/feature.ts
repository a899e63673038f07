import {
  type Config,
  newMediaId,
  mediaLimits,
  type MediaStore,
  type MetricsRegistry,
  createMediaIntake,
  resolveFfmpeg,
  createGuardedFetch,
  startPeriodicTask,
  type PeriodicTask,
  type Feature,
  type Platform,
  type DomainEvents,
} from '../platform/index.ts';
import type { AgentModel, AgentUsage } from './agents/agent-model.ts';
import {
  type JobEvents,
  type JobsRepository,
  isAcceptedImageUrl,
  ownMediaId,
  type JobsService,
} from '../jobs/index.ts';
import { buffer } from 'node:stream/consumers';
import { createBuiltinAgent } from './agents/builtin.ts';
import { createChatClient } from './agents/llm/chat-client.ts';
import { createLlmAgent } from './agents/llm/agent.ts';
import type {
  AssetsRepository,
  ProjectCommands,
  ProjectsRepository,
  ThreadRepository,
  UserCredits,
} from '../../actors/index.ts';
import type { UsersRepository } from '../accounts/index.ts';
import { createEditorService, type EditorService } from './editor-service.ts';
import { createEditorTurns, type EditorTurns } from './turns/editor-turns.ts';
import { createGeneratedAssets } from './generated-assets.ts';
import type { VideoExporter } from './ports/video-exporter.ts';
import { createTurnMedia } from './turns/turn-media.ts';
import { refundDroppedTurn } from './turns/turn-refunds.ts';
import { editorRoutes } from './routes.ts';
import type { AssetPictures } from './asset-pictures.ts';

type EditorConfig = Pick<
  Config,
  | 'agent'
  | 'llm'
  | 'turnLeaseMs'
  | 'uploadMaxBytes'
  | 'imageMaxPixels'
  | 'webhookAllowPrivate'
  | 'ffmpegPath'
  | 'ffprobePath'
  | 'nodeId'
  | 'tuning'
>;

/** Lease sweeps a batch at a time; a project fails its lapsed turn on its own actor. */
const LEASE_SWEEP_BATCH = 100;

/** The platform and what the wiring gives the editor slice. */
export type EditorPlatform = Platform & {
  repositories: {
    projects: ProjectsRepository;
    assets: AssetsRepository;
    thread: ThreadRepository;
    jobs: JobsRepository;
    users: UsersRepository;
  };
  credits: UserCredits;
  /** The project actor's commands: the one way a project changes. */
  projects: ProjectCommands;
  /** The jobs' announcements: waiting turns hear their media's job end, delivered media become assets. */
  jobEvents: Pick<DomainEvents<JobEvents>, 'subscribe'>;
  /** The pictures of assets: older assets get theirs when the project is read (asset-pictures.ts). */
  pictures?: Pick<AssetPictures, 'backfill' | 'mediaIdsOf'>;
};

/**
 * The chat-driven editor (docs/editor.md): projects and their documents, uploads and imports, direct edits
 * and agent turns through the project actor, the lease sweep that fails turns whose node died, and the
 * `job.finished` subscriber that turns media delivered after their turn into assets.
 */
export function editorFeature(
  config: EditorConfig,
  platform: EditorPlatform,
  jobsService: JobsService,
  /** The export feature's service: the agents' `export_video` exports as `POST .../export` does. */
  exports: VideoExporter,
): Feature & { editor: EditorService; turns: EditorTurns } {
  const { store, log, clock, mediaUrl, baseUrl } = platform;
  const { projects, assets, thread, jobs } = platform.repositories;
  const commands = platform.projects;
  const ffmpeg = resolveFfmpeg({ ffmpegPath: config.ffmpegPath, ffprobePath: config.ffprobePath });
  const intake = createMediaIntake({
    store,
    ffmpegPath: ffmpeg.ffmpeg,
    ffprobePath: ffmpeg.ffprobe,
    fetch: createGuardedFetch(),
    allowPrivate: config.webhookAllowPrivate,
    fetchTimeoutMs: config.tuning.inboundFetchTimeoutMs,
    newMediaId,
    resolveOwn: (url) => ownMediaId(url, baseUrl),
    limits: mediaLimits(config.imageMaxPixels),
  });
  const generated = createGeneratedAssets({ store, commands, projects });
  // Resolves once a completed editor job's media are an asset of its project (a rejection, or a turn that
  // still holds the project, leaves the job flagged in the jobs' outbox, which tells this again). Never
  // unsubscribed: a subscriber missing at shutdown would let the outbox confirm what it never handled.
  platform.jobEvents.subscribe('job.finished', (job) => generated.addDelivered(job));
  const editor = createEditorService({
    commands,
    credits: platform.credits,
    projects,
    assets,
    thread,
    store,
    intake,
    mediaUrl,
    uploadMaxBytes: config.uploadMaxBytes,
    clock,
    ...(platform.pictures ? { pictures: platform.pictures } : {}),
    exports,
  });
  const turns = createEditorTurns({
    commands,
    credits: platform.credits,
    balanceOf: async (userId) => (await platform.repositories.users.get(userId))?.credits ?? 0,
    projects,
    assets,
    thread,
    store,
    intake,
    agent: createAgent(config, store, assets),
    observe: agentMetrics(platform.metrics, config.agent),
    media: createTurnMedia({
      jobsService,
      jobs,
      jobEvents: platform.jobEvents,
      generated,
      // Cluster mode only: any node may end the job (turn-media.ts).
      ...(platform.nats ? { recheckMs: config.tuning.turnJobCheckMs } : {}),
      progressIntervalMs: config.tuning.mediaProgressIntervalMs,
      logger: log,
    }),
    exports,
    mediaUrl,
    nodeId: config.nodeId,
    turnLeaseMs: config.turnLeaseMs,
    clock,
    logger: log,
  });

  let sweep: PeriodicTask | undefined;
  return {
    editor,
    turns,
    routes: editorRoutes(editor, turns, {
      acceptsUrl: (url) => isAcceptedImageUrl(url, baseUrl),
      uploadMaxBytes: config.uploadMaxBytes,
    }),
    async start() {
      sweep = startPeriodicTask({
        name: 'turn lease sweep',
        intervalMs: Math.max(200, Math.floor(config.turnLeaseMs / 10)),
        logger: log,
        run: async () => {
          const seenAt = clock.now();
          const lapsed = await projects.expiredLeases(new Date(seenAt), LEASE_SWEEP_BATCH);
          for (const projectId of lapsed) {
            const { expired } = await commands.expire_turn(projectId, { seen_at: seenAt });
            if (expired) turns.wake(projectId);
          }
          for (const owing of await projects.withRefundsDue(LEASE_SWEEP_BATCH)) {
            const turnIds = owing.refunds_due ?? [];
            for (const turnId of turnIds) await refundDroppedTurn(platform.credits, owing.user_id, turnId);
            await commands.refunds_settled(owing.id, { turn_ids: turnIds });
          }
        },
      });
    },
    async stop() {
      await sweep?.stop();
    },
  };
}

/** A reference image larger than this is described to the model by id only (vision inputs are capped). */
const INLINE_IMAGE_MAX_BYTES = 5 * 1024 * 1024;

/** The configured agent (`AGENT`): the builtin director, or the LLM agent (docs/editor.md, The LLM agent). */
function createAgent(config: EditorConfig, store: MediaStore, assets: AssetsRepository): AgentModel {
  if (config.agent === 'builtin') return createBuiltinAgent();
  const { apiKey, baseUrl, model, timeoutMs, maxSteps } = config.llm;
  // AGENT=llm without LLM_API_KEY: instruct answers 503 before anything is charged (docs/editor.md).
  if (!apiKey) {
    return {
      configured: false,
      runTurn: () => Promise.reject(new Error('the LLM agent is not configured')),
    };
  }
  return createLlmAgent({
    client: createChatClient({ baseUrl, apiKey, model, timeoutMs }),
    maxSteps,
    // Reference images go inline (a data: URL): the LLM server need not reach PUBLIC_BASE_URL.
    imageUrl: async (reference) => {
      const asset = await assets.get(reference.id);
      if (!asset || asset.kind !== 'image') return undefined;
      const stat = await store.stat(asset.media_id);
      if (!stat || stat.size > INLINE_IMAGE_MAX_BYTES) return undefined;
      const bytes = await buffer(await store.open(asset.media_id));
      return `data:${asset.content_type};base64,${bytes.toString('base64')}`;
    },
  });
}

/** Agent turns and the tokens they used, for `/metrics`. */
function agentMetrics(metrics: MetricsRegistry, agent: EditorConfig['agent']) {
  const turns = metrics.counter({
    name: 'mf_agent_turns_total',
    help: 'Agent turns that ran, by agent and outcome',
    labels: ['agent', 'outcome'],
  });
  const tokens = metrics.counter({
    name: 'mf_agent_tokens_total',
    help: "Tokens the LLM agent's completions used, as the LLM server counted them",
    labels: ['type'],
  });
  const completions = metrics.counter({
    name: 'mf_agent_completions_total',
    help: 'Chat completions the LLM agent asked for',
    labels: [],
  });
  return {
    turnEnded(outcome: 'completed' | 'failed', usage: AgentUsage | undefined) {
      turns.inc([agent, outcome]);
      if (!usage) return;
      tokens.inc(['prompt'], usage.prompt_tokens);
      tokens.inc(['completion'], usage.completion_tokens);
      completions.inc([], usage.completions);
    },
  };
}
