// A no-media edit turn ("remove clip 2") through the whole editor stack — the project actor, the user actor,
// the builtin director, the Mongo adapters — against the raw database operations such a turn needs, called
// directly with the driver on the same server: read the project, charge the turn (the ledger's own change),
// write the project, write the turn's events, write the thread's two messages. One turn at a time (below
// saturation), a fresh jongodb, one fresh project per turn so every turn does the same work (jongodb's
// inserts slow as collections grow: both sides write the same documents). Budget: the turn's
// p50 at most 15 ms above the raw operations' p50.
import { MongoClient } from 'mongodb';
import { newId } from '../../src/platform/core/ids.ts';
import { startMongo } from '../helpers/mongo.ts';
import { addBareImage, richEditor, startEditorStack, type EditorStack } from '../helpers/editor-stack.ts';
import { load1, percentile, verdict } from '../helpers/bench.ts';

const TURNS = Number(process.env.BENCH_EDITOR_TURNS ?? 150);
const WARMUP = 20;
const BUDGET_MS = 15;

async function projectWithThreeClips(stack: EditorStack, userId: string) {
  const { project } = await stack.editor.createProject(userId, { aspect_ratio: '9:16' });
  const record = (await stack.repositories.projects.get(project.id))!;
  const assetId = await addBareImage(stack, project.id, userId);
  for (let i = 0; i < 3; i++) {
    await stack.editor.addClip(record, { track: 'video', asset_id: assetId }, {});
  }
  return (await stack.repositories.projects.get(project.id))!;
}

async function main() {
  const mongo = await startMongo();
  const stack = await startEditorStack({ mongoUrl: mongo.uri, db: 'bench' });
  const raw = new MongoClient(mongo.uri);
  await raw.connect();
  const db = raw.db('bench_raw');
  try {
    const { userId, principal } = await richEditor(stack);

    const turnTimes: number[] = [];
    for (let i = 0; i < WARMUP + TURNS; i++) {
      const project = await projectWithThreeClips(stack, userId);
      const started = performance.now();
      const answer = await stack.turns.instruct(principal, project, {
        instruction: 'remove clip 2',
        image_urls: [],
      });
      const elapsed = performance.now() - started;
      if (answer.clips_created.length !== 0 || !answer.assistant_text)
        throw new Error('unexpected turn answer');
      if (i >= WARMUP) turnTimes.push(elapsed);
    }

    // The same documents, written directly: one project, its three clips, the turn's events and messages.
    const template = await projectWithThreeClips(stack, userId);
    const ledgerUser = newId('usr');
    await stack.repositories.users.create({
      id: ledgerUser,
      email: 'raw@example.com',
      credits: 1e9,
      created_at: new Date(),
    });
    const rawTimes: number[] = [];
    const projects = db.collection<Record<string, unknown>>('projects');
    const buckets = db.collection<Record<string, unknown>>('project_event_buckets');
    const messages = db.collection<Record<string, unknown>>('project_messages');
    for (let i = 0; i < WARMUP + TURNS; i++) {
      const id = newId('vp');
      const { id: _id, ...doc } = template;
      await projects.insertOne({ _id: id, ...doc } as Record<string, unknown>);
      const started = performance.now();
      const found = await projects.findOne({ _id: id } as Record<string, unknown>);
      await stack.repositories.ledger.apply({
        userId: ledgerUser,
        opId: newId('op'),
        delta: -5,
        reason: 'agent_turn',
      });
      const clips = (found!.clips as { idx: number }[]).filter((clip) => clip.idx !== 1);
      await projects.replaceOne({ _id: id, version: found!.version } as Record<string, unknown>, {
        ...found,
        clips,
        version: 1,
      });
      const events = Array.from({ length: 8 }, (_, seq) => ({ type: 'x', seq: seq + 1, data: {} }));
      await buckets.replaceOne(
        { _id: `${id}:0` } as Record<string, unknown>,
        { project_id: id, events },
        { upsert: true },
      );
      for (const role of ['user', 'assistant']) {
        await messages.updateOne(
          { _id: `msg_${id}_${role}` } as Record<string, unknown>,
          { $setOnInsert: { project_id: id, role, text: 'remove clip 2', created_at: new Date() } },
          { upsert: true },
        );
      }
      const elapsed = performance.now() - started;
      if (i >= WARMUP) rawTimes.push(elapsed);
    }

    turnTimes.sort((a, b) => a - b);
    rawTimes.sort((a, b) => a - b);
    const turnP50 = percentile(turnTimes, 0.5);
    const rawP50 = percentile(rawTimes, 0.5);
    const overhead = turnP50 - rawP50;
    console.log(
      `editor edit turn: p50 ${turnP50.toFixed(1)} ms p99 ${percentile(turnTimes, 0.99).toFixed(1)} ms; ` +
        `raw operations p50 ${rawP50.toFixed(1)} ms; overhead +${overhead.toFixed(1)} ms ` +
        `(budget +${BUDGET_MS} ms) ${verdict(overhead <= BUDGET_MS, `edit turn p50 <= raw p50 + ${BUDGET_MS} ms`, `+${overhead.toFixed(1)} ms`)} load ${load1()}`,
    );
  } finally {
    await raw.close();
    await stack.close();
    await mongo.stop();
  }
}

await main();
