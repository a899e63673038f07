import pino from 'pino';
import { newId } from '../../src/platform/core/ids.ts';
import type { KeyPrincipal } from '../../src/platform/http/principal.ts';
import { connectMongo, type MongoConnection } from '../../src/platform/mongo/connect.ts';
import { createMongoAssets } from '../../src/editor/mongo/assets.ts';
import { createMongoCreditLedger } from '../../src/credits/mongo-ledger.ts';
import { createMongoEventHistory } from '../../src/editor/mongo/event-history.ts';
import { createMongoProjects } from '../../src/editor/mongo/projects.ts';
import { createMongoThread } from '../../src/editor/mongo/thread.ts';
import { createMongoUsers } from '../../src/accounts/mongo/users.ts';
import { createBuiltinAgent } from '../../src/editor/agents/builtin.ts';
import { createActorSystem, type ActorSystem } from '../../actors/runtime/system.ts';
import { createInProcessEventBus } from '../../actors/runtime/event-bus.ts';
import { createInProcessTransport } from '../../actors/runtime/in-process.ts';
import { projectActor, projectCommands, type ProjectCommands } from '../../actors/project.ts';
import { userActor, userCredits } from '../../actors/user.ts';
import { systemClock, type Clock } from '../../src/platform/core/clock.ts';
import type { AgentModel } from '../../src/editor/agents/agent-model.ts';
import type { EventBus } from '../../src/platform/core/event-bus.ts';
import type { MediaIntake } from '../../src/platform/media/media-intake-port.ts';
import type { MediaStore } from '../../src/platform/storage/media-store.ts';
import { createEditorService, type EditorService } from '../../src/editor/editor-service.ts';
import { createEditorTurns, type EditorTurns } from '../../src/editor/turns/editor-turns.ts';
import { createGeneratedAssets } from '../../src/editor/generated-assets.ts';
import { createTurnMedia } from '../../src/editor/turns/turn-media.ts';
import { createDomainEvents } from '../../src/platform/core/domain-events.ts';
import type { JobEvents } from '../../src/jobs/job-outbox.ts';

// The editor wired in this process, on a real MongoDB-wire server and the in-process actor transport: what
// the service runs in single-node mode, without HTTP, the provider or ffmpeg (no media). For actor and
// service tests and the editor benchmark.

const refuse = () => Promise.reject(new Error('not available in the editor test stack'));
const noMedia = {
  put: refuse,
  stat: async () => null,
  open: refuse,
  delete: async () => undefined,
} as MediaStore;
const noIntake: MediaIntake = { fromStream: refuse, fromUrl: refuse, probeStored: refuse };

export interface EditorStack {
  mongo: MongoConnection;
  actors: ActorSystem;
  events: EventBus;
  repositories: Awaited<ReturnType<typeof repositoriesOn>>;
  editor: EditorService;
  turns: EditorTurns;
  commands: ProjectCommands;
  close(): Promise<void>;
}

async function repositoriesOn(mongo: MongoConnection, clock: Clock) {
  const [users, ledger, projects, assets, thread, history] = await Promise.all([
    createMongoUsers(mongo.db),
    createMongoCreditLedger(mongo.db, clock),
    createMongoProjects(mongo.db),
    createMongoAssets(mongo.db),
    createMongoThread(mongo.db),
    createMongoEventHistory(mongo.db),
  ]);
  return { users, ledger, projects, assets, thread, history };
}

export async function startEditorStack(options: {
  mongoUrl: string;
  db: string;
  clock?: Clock;
  agent?: AgentModel;
  turnLeaseMs?: number;
  turnQueueMax?: number;
  /** `TIMELINE_MAX_SEC` (default 1800, as the service's). */
  timelineMaxSec?: number;
}): Promise<EditorStack> {
  const clock = options.clock ?? systemClock;
  const logger = pino({ level: process.env.MF_TEST_LOG ?? 'silent' });
  const mongo = await connectMongo(options.mongoUrl, options.db);
  const repositories = await repositoriesOn(mongo, clock);
  const mediaUrl = (id: string) => `http://127.0.0.1/media/${id}`;
  const turnLeaseMs = options.turnLeaseMs ?? 30_000;
  const events = createInProcessEventBus({ logger });
  const actors = await createActorSystem({
    transport: createInProcessTransport(),
    kinds: [
      { actor: userActor, ports: { ledger: repositories.ledger } },
      {
        actor: projectActor,
        ports: {
          ...repositories,
          mediaUrl,
          turnLeaseMs,
          turnQueueMax: options.turnQueueMax ?? 10,
          timelineMaxSec: options.timelineMaxSec ?? 1800,
        },
      },
    ],
    events,
    logger,
    clock,
  });
  const commands = projectCommands(actors);
  const editor = createEditorService({
    commands,
    credits: userCredits(actors),
    ...repositories,
    store: noMedia,
    intake: noIntake,
    mediaUrl,
    uploadMaxBytes: 1024,
    clock,
  });
  const turns = createEditorTurns({
    commands,
    credits: userCredits(actors),
    balanceOf: async (userId) => (await repositories.users.get(userId))?.credits ?? 0,
    ...repositories,
    store: noMedia,
    intake: noIntake,
    agent: options.agent ?? createBuiltinAgent(),
    media: createTurnMedia({
      jobsService: { submitImage: refuse, submitVideo: refuse },
      jobs: { get: refuse },
      jobEvents: createDomainEvents<JobEvents>({ log: logger }),
      generated: createGeneratedAssets({ store: noMedia, commands, projects: repositories.projects }),
      progressIntervalMs: 1000,
      logger,
    }),
    exports: { export: refuse, failureCode: () => undefined, forgetProject: async () => undefined },
    mediaUrl,
    nodeId: 'test-node',
    turnLeaseMs,
    clock,
    logger,
  });
  return {
    mongo,
    actors,
    events,
    repositories,
    editor,
    turns,
    commands,
    async close() {
      await actors.close();
      await mongo.close();
    },
  };
}

/**
 * Adds an image asset to a project straight through its actor (no file behind it: benches and actor tests
 * place it on timelines, nothing reads its bytes). Answers the asset's id.
 */
export async function addBareImage(
  stack: Pick<EditorStack, 'commands'>,
  projectId: string,
  userId: string,
  metadata: Record<string, unknown> = {},
): Promise<string> {
  const { asset } = await stack.commands.add_asset(projectId, {
    op_id: newId('op'),
    asset: {
      id: newId('va'),
      user_id: userId,
      kind: 'image',
      source: 'upload',
      media_id: 'med_bare.png',
      content_type: 'image/png',
      metadata,
    },
  });
  return asset.id;
}

/** A user with a billion credits and a principal of theirs that may edit: what benches drive turns with. */
export async function richEditor(stack: Pick<EditorStack, 'repositories'>) {
  const userId = newId('usr');
  await stack.repositories.users.create({
    id: userId,
    email: `${userId}@example.com`,
    credits: 1_000_000_000,
    created_at: new Date(),
  });
  const principal = { userId, keyId: newId('key'), scopes: ['video-editor:write'] } as KeyPrincipal;
  return { userId, principal };
}
