// Stop signals as users send them (docs/operator.md, "Health and shutdown"): the service started with
// `npm start` leads its own process group, as from a shell. `npm` forwards SIGTERM and SIGINT to the service, so a
// signal to npm, or to the whole group, reaches the service twice or more; a turn in flight must still finish,
// on the embedded database and the render ffmpeg that a group signal must not reach, and nothing may be left
// running once the service is gone.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceEnv, call } from '../helpers/service.ts';
import { watchProcess, type WatchedProcess } from '../helpers/processes.ts';
import { editorClient, editorUser } from '../helpers/editor.ts';
import { childrenOf, isRunning, processInfo, type ProcessInfo } from '../helpers/process-tree.ts';
import { sleep, until } from '../helpers/wait.ts';

const linuxOnly = { skip: process.platform !== 'linux' };

/** `npm start` in embedded mode, in a process group of its own, with an editor user and a storyboarded project. */
async function npmStart(sceneMs: number, scenes = 2) {
  const npm = watchProcess(
    'npm',
    ['start', '--silent'],
    {
      // A grace far beyond the work's length: a loaded machine slows the export, and the drain must not cut it.
      ...serviceEnv({ SANDBOX_VIDEO_MS: String(sceneMs), SHUTDOWN_GRACE_MS: '120000' }),
      npm_config_update_notifier: 'false',
    },
    { detached: true },
  );
  const url = (await npm.waitForLine(/listening on (http:\/\/\S+)/, 60_000))[1]!;
  const adminToken = npm.lines.map((line) => /admin token:\s+(\S+)/.exec(line)?.[1]).find(Boolean)!;
  const npmPid = npm.child.pid!;
  // `npm start` runs `exec node ...`: the service is npm's one child, in npm's group.
  const [node] = childrenOf(npmPid);
  assert.ok(node, 'the service runs below npm');
  assert.equal(node.pgid, npmPid, 'the service is in the group that npm leads');
  const database = childrenOf(node.pid).find((child) => child.comm === 'jongodb');
  assert.ok(database, 'the embedded database runs below the service');

  const { token } = await editorUser({ url, adminToken });
  const editor = editorClient(() => ({ url }), token);
  const project = await editor.createProject({ name: 'signals' });
  const storyboard = await editor.instruct(project.id, {
    instruction: `a ${scenes}-scene video about a lighthouse`,
  });
  assert.equal(storyboard.status, 200, JSON.stringify(storyboard.body));
  return { npm, npmPid, node, database, url, editor, projectId: project.id };
}

/** The service's ffmpeg children, once there is one (polled every 5 ms: a signal must find it running). */
function ffmpegBelow(servicePid: number, what: string): Promise<ProcessInfo[]> {
  return until(
    `${what} (ffmpeg) to run below the service`,
    () => childrenOf(servicePid).filter((child) => child.comm === 'ffmpeg'),
    (found) => found.length > 0,
    30_000,
    5,
  );
}

/** `npm start` with a turn in flight: its scene is being rendered (by ffmpeg) when this resolves. */
async function npmStartWithTurnInFlight(sceneMs: number) {
  const started = await npmStart(sceneMs);
  const turn = started.editor.instruct(started.projectId, { instruction: 'continue' }).then(
    (answer) => answer,
    (error: Error) => error,
  );
  const renders = await ffmpegBelow(started.node.pid, 'the scene render');
  return { ...started, renders, turn };
}

/** Asserts the service's children run in groups of their own (so a signal to npm's group misses them). */
function assertOwnGroups(children: ProcessInfo[], serviceGroup: number): void {
  for (const child of children) {
    assert.equal(child.pgid, child.pid, `${child.comm} ${child.pid} leads a process group of its own`);
    assert.notEqual(child.pgid, serviceGroup);
  }
}

/** Waits until none of `pids` runs any more (a zombie counts as gone: it has exited). */
async function assertAllGone(pids: number[]): Promise<void> {
  await until(
    'every process of the service to be gone',
    () => pids.filter(isRunning).map((pid) => processInfo(pid)),
    (left) => left.length === 0,
    10_000,
  );
}

/** Scenes of the export that the signals interrupt. */
const SCENES = 6;

/** Sends `signal` twice, `gapMs` apart, to `target`: npm's pid, or the negated group id. */
async function signalTwice(target: number, signal: NodeJS.Signals, gapMs: number): Promise<void> {
  process.kill(target, signal);
  await sleep(gapMs);
  process.kill(target, signal);
}

async function drainsThroughDoubleSigterm(target: (npmPid: number) => number): Promise<void> {
  const started = await npmStartWithTurnInFlight(4000);
  const { npm, npmPid, node, database, renders } = started;
  try {
    assertOwnGroups([database, ...renders], npmPid);
    await signalTwice(target(npmPid), 'SIGTERM', 200);
    await sleep(300); // a wait for nothing: the service must still be draining, not exited
    assert.ok(isRunning(node.pid), 'the service still drains after the second SIGTERM');
    assert.ok(isRunning(database.pid), 'the embedded database outlived the signals');
    const health = await call(started.url, 'GET', '/healthz');
    assert.equal(health.status, 503, 'the node is draining');
    assert.equal(health.body.draining, true);

    const answer = await started.turn;
    assert.ok(!(answer instanceof Error), `the turn was answered: ${String(answer)}`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.clips_created?.length, 1, 'the render finished and its scene was placed');
    const exit = await npm.exited;
    assert.deepEqual(exit, { code: 0, signal: null }, npm.lines.join('\n'));
    assert.ok(
      npm.lines.some((line) => /SIGTERM again while draining: ignored, the drain goes on/.test(line)),
      `the log says the second SIGTERM was ignored:\n${npm.lines.join('\n')}`,
    );
    assert.ok(!npm.lines.some((line) => /exiting now/.test(line)), 'no signal cut the drain short');
    await assertAllGone([node.pid, database.pid, ...renders.map((render) => render.pid)]);
  } finally {
    killLeftovers(npm);
  }
}

/** Ends what a failed test left behind: the service and its children (each leads its own group). */
function killLeftovers(npm: WatchedProcess): void {
  const npmPid = npm.child.pid!;
  const service = childrenOf(npmPid);
  const below = service.flatMap((node) => childrenOf(node.pid));
  for (const info of [...below, ...service]) {
    if (isRunning(info.pid)) process.kill(info.pid, 'SIGKILL');
  }
  if (isRunning(npmPid)) process.kill(npmPid, 'SIGKILL');
}

describe('stop signals to `npm start` (docs/operator.md)', linuxOnly, () => {
  it('SIGTERM to npm alone, twice 200 ms apart: the second is logged and ignored, the turn finishes, exit 0', () =>
    drainsThroughDoubleSigterm((npmPid) => npmPid));

  it('SIGTERM to the whole process group, twice: the database and the render survive, the turn finishes, exit 0', () =>
    drainsThroughDoubleSigterm((npmPid) => -npmPid));

  it('SIGTERM to the whole group, twice, during an export: its ffmpeg survives, the export answers 200, exit 0', async () => {
    const started = await npmStart(200, SCENES);
    const { npm, npmPid, node, database, editor, projectId } = started;
    try {
      // Enough scenes for the export to outlast both signals: rendered in segments side by side, two short
      // scenes were done within the 200 ms between them.
      for (let scene = 0; scene < SCENES; scene++) {
        const answer = await editor.instruct(projectId, { instruction: 'continue' });
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
      }
      const exported = editor.exportVideo(projectId).then(
        (answer) => answer,
        (error: Error) => error,
      );
      const encoders = await ffmpegBelow(node.pid, 'the export');
      assertOwnGroups([database, ...encoders], npmPid);
      await signalTwice(-npmPid, 'SIGTERM', 200);

      const answer = await exported;
      assert.ok(!(answer instanceof Error), `the export was answered: ${String(answer)}`);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.match(answer.body.asset_id, /^va_/);
      assert.equal(answer.body.video_clip_count, SCENES);
      const exit = await npm.exited;
      assert.deepEqual(exit, { code: 0, signal: null }, npm.lines.join('\n'));
      assert.ok(npm.lines.some((line) => /SIGTERM again while draining: ignored/.test(line)));
      await assertAllGone([node.pid, database.pid, ...encoders.map((encoder) => encoder.pid)]);
    } finally {
      killLeftovers(npm);
    }
  });

  it('one Ctrl-C (SIGINT to the group, forwarded by npm too) drains; a second one exits at once, leaving nothing', async () => {
    const started = await npmStartWithTurnInFlight(8000);
    const { npm, npmPid, node, database, renders } = started;
    try {
      process.kill(-npmPid, 'SIGINT');
      await sleep(800); // past the window in which a second SIGINT is npm's copy of the first
      assert.ok(isRunning(node.pid), 'one interrupt, delivered twice, drains rather than exits');
      assert.equal((await call(started.url, 'GET', '/healthz')).status, 503, 'the node is draining');

      const secondAt = Date.now();
      process.kill(-npmPid, 'SIGINT');
      const exit = await npm.exited;
      assert.ok(
        Date.now() - secondAt < 3000,
        `exited at once, not after the 8 s turn (${Date.now() - secondAt} ms)`,
      );
      assert.equal(exit.code, 1);
      assert.ok(
        npm.lines.some((line) => /SIGINT again, exiting now/.test(line)),
        npm.lines.join('\n'),
      );
      const answer = await started.turn;
      assert.ok(answer instanceof Error, 'the turn in flight ended with the process');
      await assertAllGone([node.pid, database.pid, ...renders.map((render) => render.pid)]);
    } finally {
      killLeftovers(npm);
    }
  });
});
