// The dashboard in Chromium: Debian's Chromium driven by playwright-core against one service run from
// dist/ (sandbox provider, SANDBOX_VIDEO_MS=300, SANDBOX_IMAGE_MS=200), all on loopback.
//
// 1. JavaScript weight: every response of type `script` from a signed-out visit of /keys (sent to
//    /sign-in?next=/keys) through /keys signed in, each counted once by URL, gzip-compressed (the bytes on the wire when the server compressed, else the body
//    through gzipSync level 9). Budget ≤ 150 KB.
// 2. Editor load: a project with 12 image clips on its video track (made through the REST API with a key of
//    the signed-in user), `/editor/<id>` loaded LOADS times; from navigation start (performance.timeOrigin)
//    until the Video track shows 12 clips and the Instruction field is enabled, read in the page on
//    every animation frame. Budget: p95 ≤ 1 s (median printed beside it).
// 2b. The studio under the hand, on that project: a drag of its first clip along the Video track for about 2 s
//    (a mouse move every 16 ms), frames per second from requestAnimationFrame stamps (budget ≥ 50); the
//    preview playing for PLAY_MS, a 30 fps frame counted dropped when no animation frame came in its slot
//    (budget < 5 %).
// 2c. The heap: rounds of 1.5 s playing, then a clip moved (Alt+ArrowRight) and the move undone (Ctrl+Z). The
//    page's JavaScript heap after a forced collection (CDP HeapProfiler.collectGarbage, Runtime.getHeapUsage):
//    "start" is read after WARM_MIN minutes (default 1) of those rounds, on the page 2b left (loaded, dragged,
//    played), "end" after SOAK_MIN more minutes (default 10). Budget: end within +20 % of start. The warm-up
//    is there because V8 keeps optimising the hot code of the rounds for about a minute (heap snapshots of
//    the rounds: the page's objects stop growing within 30 s, compiled code grows 0.7 → 1.8 MB in 3 min, then
//    by 1 % in the next 3; docs/benchmarks.md); the growth from before it is printed too, not judged. Heap
//    snapshots at start and end split the growth into the page's JavaScript, compiled code and the browser's
//    own objects, with the groups that grew most (test/helpers/heap-snapshot.ts). Last run (quiet):
//    4.40 → 4.67 MB, +6.2 % (from before the warm-up +27.2 %); the page's JavaScript −4 KB.
// 2d. 12 video clips (5 s, 1280x720, 30 fps, h264/AAC, as test/bench/export.ts makes them) on a project's
//    Video track, their pictures made, every preview element loaded; played from VIDEO_FROM_SEC (3.5 s) for
//    VIDEO_PLAY_MS (10 s) across the cuts at 5 and 10 s. Dropped 30 fps frames as in 2b (budget < 5 %), and
//    the pictures the canvas shows: each animation frame a hash of four rows of the compositor's canvas,
//    counted when it changed, from the first picture of playback to the Pause (budget ≥ 28.5 a second,
//    30 × 0.95; the time from the click to that first picture is printed); printed beside it, the frames the
//    video elements presented (requestVideoFrameCallback), how many of them the page's frame callbacks saw
//    (fewer when its thread is too busy: a frame never seen cannot be drawn) and how often one went back in
//    time (a seek). Last run (quiet): 0 of 302 dropped, 29.0 pictures a second (the elements presented 29.4,
//    291 seen); at load 4 (two busy loops beside it) 28.3, the page having seen 284 of 296 (docs/benchmarks.md).
// 3. Agent events drawn: a WebSocket wrapper (addInitScript) stamps performance.now() on every message, by
//    seq, and a MutationObserver stamps when what it says is in the DOM (assistant.delta: its text in the
//    conversation; clip.created: the clip's item on the Video track). Builtin director turns ("a 3-scene
//    video about …", then "continue" ×3) on fresh projects until ≥ MIN_EVENTS events. Budget: p99 ≤ 100 ms.
import { gzipSync } from 'node:zlib';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { startMongo } from '../helpers/mongo.ts';
import { startService, call, adminClient, TEST_ADMIN_TOKEN } from '../helpers/service.ts';
import { launchChromium, CHROMIUM_PATH } from '../helpers/chromium.ts';
import { EDITOR_SCOPES, editorClient, makeMedia } from '../helpers/editor.ts';
import { load1, percentile, verdict } from '../helpers/bench.ts';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { heapGrowth as grownGroups, heapKinds, heapSummary } from '../helpers/heap-snapshot.ts';

const run = promisify(execFile);

const LOADS = Number(process.env.BENCH_DASHBOARD_LOADS ?? 10);
const CLIPS = 12;
const MIN_EVENTS = Number(process.env.BENCH_DASHBOARD_EVENTS ?? 20);
const JS_BUDGET_KB = 150;
const LOAD_BUDGET_MS = 1000;
const EVENT_BUDGET_MS = 100;
const DRAG_FPS_BUDGET = 50;
const PLAY_DROP_BUDGET = 0.05;
const PLAY_MS = Number(process.env.BENCH_DASHBOARD_PLAY_MS ?? 6000);
const SOAK_MIN = Number(process.env.BENCH_DASHBOARD_SOAK_MIN ?? 10);
const HEAP_GROWTH_BUDGET = 0.2;
/** 2c: minutes of the same rounds before the heap's start is read (V8 optimises the hot code meanwhile). */
const WARM_MIN = Number(process.env.BENCH_DASHBOARD_WARM_MIN ?? 1);
const TURN_MS = 60_000;
/** 2d: where the video clips' playback starts (before the first cut, at 5 s), for how long, and its budget. */
const VIDEO_FROM_SEC = 3.5;
const VIDEO_PLAY_MS = Number(process.env.BENCH_DASHBOARD_VIDEO_PLAY_MS ?? 10_000);
const VIDEO_FPS_BUDGET = 30 * 0.95;
const VIDEO_CLIP_SEC = 5;

/** 12 clips as the export bench makes them (test/bench/export.ts): 1280x720 30 fps h264/AAC, a hue each. */
async function makeVideoClips(): Promise<Buffer[]> {
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH });
  const dir = mkdtempSync(join(tmpdir(), 'mf-bench-dashboard-'));
  const make = async (i: number) => {
    const file = join(dir, `clip${i}.mp4`);
    await run(ffmpeg, [
      ...['-hide_banner', '-nostdin', '-v', 'error', '-y'],
      ...['-f', 'lavfi', '-i', `testsrc2=size=1280x720:rate=30,hue=h=${i * 30}`],
      ...['-f', 'lavfi', '-i', `sine=frequency=${300 + 40 * i}:sample_rate=48000`],
      ...['-t', String(VIDEO_CLIP_SEC), '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23'],
      ...['-pix_fmt', 'yuv420p', '-c:a', 'aac', '-ac', '2', '-ar', '48000', '-b:a', '128k', file],
    ]);
    return readFileSync(file);
  };
  try {
    const clips: Buffer[] = [];
    // Two at a time: the machine has two cores.
    for (let i = 0; i < CLIPS; i += 2) clips.push(...(await Promise.all([make(i), make(i + 1)])));
    return clips;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const ms = (value: number) => value.toFixed(1);

/** What the init script keeps in the page (see INIT). */
interface Probe {
  armed: boolean;
  arrived: Record<string, { type: string; at: number; text?: string; idx?: number }>;
  drawn: Record<string, number>;
}

// In the page, before any of its scripts: stamp every socket message, and on every DOM change check whether
// the pending events are drawn. Plain JS source (the page's CSP does not apply to init scripts).
const INIT = `(() => {
  const probe = { armed: false, arrived: {}, drawn: {} };
  globalThis.__probe = probe;
  const pending = new Map();
  const check = () => {
    if (pending.size === 0) return;
    const now = performance.now();
    const log = document.querySelector('[role="log"]');
    const text = log ? log.textContent : '';
    const track = document.querySelector('[role="group"][aria-label="Video track"]');
    for (const [seq, event] of pending) {
      let done = false;
      if (event.type === 'assistant.delta') done = text.includes(event.text);
      else if (track) done = !!track.querySelector('[role="button"][aria-label^="' + (event.idx + 1) + ': "]');
      if (done) {
        probe.drawn[seq] = now;
        pending.delete(seq);
      }
    }
  };
  new MutationObserver(check).observe(document, { subtree: true, childList: true, characterData: true });
  const Native = globalThis.WebSocket;
  class Probed extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (message) => {
        const at = performance.now();
        if (!probe.armed || typeof message.data !== 'string') return;
        let event;
        try { event = JSON.parse(message.data); } catch { return; }
        if (event.type === 'assistant.delta') {
          const entry = { type: event.type, at, text: String(event.data.text) };
          probe.arrived[event.seq] = entry;
          pending.set(event.seq, entry);
        } else if (event.type === 'clip.created' && event.data.clip.track === 'video') {
          const entry = { type: event.type, at, idx: event.data.clip.idx };
          probe.arrived[event.seq] = entry;
          pending.set(event.seq, entry);
        }
      });
    }
  }
  globalThis.WebSocket = Probed;
})();`;

const mongo = await startMongo();
const service = await startService({
  MONGO_URL: mongo.uri,
  MONGO_DB: 'bench_dashboard',
  SANDBOX_VIDEO_MS: '300',
  SANDBOX_IMAGE_MS: '200',
  PROVIDER_POLL_INTERVAL_MS: '100',
  RATE_LIMIT_PER_MINUTE: '1000000000',
  LOG_LEVEL: 'warn',
});
const browser = await launchChromium({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
const results: boolean[] = [];
try {
  const page = browser.page;
  page.setDefaultTimeout(30_000);
  const url = (path: string) => `${service.url}${path}`;
  const user = {
    email: `bench-${Date.now()}@example.com`,
    password: `pass-bench-${randomBytes(8).toString('hex')}`,
  };
  const admin = adminClient(service);
  const userId = await admin.createUser(user.email, 1_000_000);
  const set = await call(service.url, 'POST', `/api/admin/v1/users/${userId}/password`, {
    token: TEST_ADMIN_TOKEN,
    body: { password: user.password },
  });
  if (set.status !== 200) throw new Error(`set password: ${set.status} ${JSON.stringify(set.body)}`);
  const { apiKey } = await admin.createKey(userId, EDITOR_SCOPES);
  const editor = editorClient(() => service, apiKey);

  // ---- 1. JavaScript to sign in and reach the app ----
  const scripts = new Map<string, number>();
  /** The document each script was loaded for, and the scripts the server sent compressed. */
  const loadedFrom = new Map<string, string>();
  const compressed: string[] = [];
  // A body the browser dropped when it navigated away (a client-side redirect) is fetched again here.
  const bodyOf = async (address: string, read: () => Promise<Buffer>) => {
    try {
      return await read();
    } catch {
      return Buffer.from(await (await fetch(address)).arrayBuffer());
    }
  };
  const pendingSizes: Promise<void>[] = [];
  page.on('response', (response) => {
    if (response.request().resourceType() !== 'script' || scripts.has(response.url())) return;
    scripts.set(response.url(), 0);
    const from = new URL(response.frame().url()).pathname;
    pendingSizes.push(
      (async () => {
        // Compressed by the server: the bytes on the wire; else gzip -9 of the body.
        const encoding = (await response.allHeaders())['content-encoding'];
        const gz =
          encoding !== undefined && encoding !== 'identity'
            ? (await response.request().sizes()).responseBodySize
            : gzipSync(await bodyOf(response.url(), () => response.body()), { level: 9 }).length;
        if (encoding !== undefined && encoding !== 'identity') compressed.push(response.url());
        scripts.set(response.url(), gz);
        loadedFrom.set(response.url(), from);
      })(),
    );
  });
  // The app's first page, signed out: the service sends it to /sign-in?next=/keys, and back after the sign-in.
  await page.goto(url('/keys'));
  await page.waitForURL((u) => u.pathname === '/sign-in');
  await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
  await page.getByLabel('Email', { exact: true }).fill(user.email);
  await page.getByLabel('Password', { exact: true }).fill(user.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL((u) => u.pathname === '/keys');
  await page.getByRole('heading', { level: 1, name: 'API keys', exact: true }).waitFor();
  await page
    .getByRole('navigation', { name: 'Main' })
    .getByRole('link', { name: 'Editor', exact: true })
    .waitFor();
  await Promise.all(pendingSizes);
  page.removeAllListeners('response');
  const jsBytes = [...scripts.values()].reduce((a, b) => a + b, 0);
  const jsPass = jsBytes <= JS_BUDGET_KB * 1024 && scripts.size > 0;
  results.push(jsPass);
  console.log(
    `dashboard JavaScript, /sign-in → ${new URL(page.url()).pathname} (Chromium ${CHROMIUM_PATH}, load ${load1()}):\n` +
      [...scripts]
        .map(
          ([u, b]) =>
            `  ${new URL(u).pathname.padEnd(40)} ${(b / 1024).toFixed(1)} KB gzip, loaded for ${loadedFrom.get(u)}` +
            `${compressed.includes(u) ? ' (compressed by the server)' : ' (served uncompressed: gzip -9 here)'}\n`,
        )
        .join('') +
      `  ${scripts.size} scripts, ${(jsBytes / 1024).toFixed(1)} KB gzip [budget: ≤ ${JS_BUDGET_KB} KB: ${verdict(jsPass, `JavaScript <= ${JS_BUDGET_KB} KB gzip`, `${(jsBytes / 1024).toFixed(1)} KB in ${scripts.size} scripts`)}]`,
  );

  // ---- 2. A 12-clip project's editor page ----
  const project = await editor.createProject({ name: 'Bench 12 clips', aspect_ratio: '16:9' });
  const png = makeMedia('png', { colour: 'navy' });
  for (let i = 0; i < CLIPS; i++) {
    const up = await editor.upload(project.id, png, 'image/png');
    if (up.status !== 200) throw new Error(`upload: ${up.status} ${JSON.stringify(up.body)}`);
    const placed = await editor.addClip(project.id, { track: 'video', asset_id: up.body.asset.id });
    if (placed.status !== 200) throw new Error(`clip: ${placed.status} ${JSON.stringify(placed.body)}`);
  }
  const ready = (count: number) =>
    page.waitForFunction(
      (n) => {
        interface Node {
          querySelector(selector: string): Node | null;
          querySelectorAll(selector: string): { length: number };
          disabled?: boolean;
        }
        const doc = (globalThis as unknown as { document: Node }).document;
        const track = doc.querySelector('[role="group"][aria-label="Video track"]');
        const items = track ? track.querySelectorAll('[role="button"]').length : 0;
        const field = doc.querySelector('#instruction');
        return items === n && field !== null && field.disabled !== true ? performance.now() : false;
      },
      count,
      { polling: 'raf', timeout: 30_000 },
    );
  const loadTimes: number[] = [];
  for (let i = 0; i < LOADS + 1; i++) {
    await page.goto(url(`/editor/${project.id}`), { waitUntil: 'commit' });
    const at = (await (await ready(CLIPS)).jsonValue()) as number;
    // Checked by role and label once: the items are the Video track's clips and the field is usable.
    if (i === 0) {
      const track = page
        .getByRole('region', { name: 'Timeline', exact: true })
        .getByRole('group', { name: 'Video track', exact: true });
      const items = await track.getByRole('button').count();
      if (items !== CLIPS) throw new Error(`the Video track shows ${items} clips`);
      if (!(await page.getByLabel('Instruction', { exact: true }).isEnabled()))
        throw new Error('Instruction is disabled');
      continue; // the first load fills the cache; not counted
    }
    loadTimes.push(at);
  }
  const loads = sorted(loadTimes);
  const loadP50 = percentile(loads, 0.5);
  const loadP95 = percentile(loads, 0.95);
  const loadPass = loadP95 <= LOAD_BUDGET_MS;
  results.push(loadPass);
  console.log(
    `dashboard editor load, ${CLIPS}-clip project, ${LOADS} loads after one warm-up (load ${load1()}):\n` +
      `  navigation start → 12 clips drawn and Instruction enabled: p50 ${ms(loadP50)} p95 ${ms(loadP95)} ` +
      `max ${ms(loads.at(-1)!)} ms (${loads.map((t) => t.toFixed(0)).join(' ')}) ` +
      `[budget: p95 ≤ ${LOAD_BUDGET_MS} ms: ${verdict(loadPass, `editor load p95 <= ${LOAD_BUDGET_MS} ms`, `${ms(loadP95)} ms`)}]`,
  );

  // ---- 2b. The studio under the hand: a drag on the timeline, and the preview playing ----
  /** The page's animation-frame times (requestAnimationFrame stamps) while `during` runs. */
  const frameTimes = async (during: () => Promise<void>): Promise<number[]> => {
    // A string, not a function: the bundler's helpers for named functions do not exist in the page.
    await page.evaluate(`
      window.__frames = [];
      window.__recording = true;
      requestAnimationFrame(function tick(at) {
        if (!window.__recording) return;
        window.__frames.push(at);
        requestAnimationFrame(tick);
      });
    `);
    await during();
    return page.evaluate(() => {
      const g = globalThis as unknown as { __frames: number[]; __recording: boolean };
      g.__recording = false;
      return g.__frames;
    });
  };
  const gaps = (frames: number[]) => frames.slice(1).map((at, i) => at - frames[i]!);
  const videoLane = page
    .getByRole('region', { name: 'Timeline', exact: true })
    .getByRole('group', { name: 'Video track', exact: true });
  const first = await videoLane.getByRole('button').first().boundingBox();
  const laneBox = await videoLane.boundingBox();
  if (!first || !laneBox) throw new Error('the Video track has no box');
  // A hand's drag: the first clip carried along the lane for about 2 s, a move every 16 ms.
  const dragFrames = await frameTimes(async () => {
    const y = first.y + first.height / 2;
    await page.mouse.move(first.x + first.width / 2, y);
    await page.mouse.down();
    const span = laneBox.x + laneBox.width - 20 - (first.x + first.width / 2);
    for (let step = 1; step <= 120; step++) {
      await page.mouse.move(first.x + first.width / 2 + (span * step) / 120, y);
      await new Promise((resolve) => setTimeout(resolve, 16));
    }
    await page.mouse.up();
  });
  const dragGaps = sorted(gaps(dragFrames));
  const dragFps = (dragFrames.length - 1) / ((dragFrames.at(-1)! - dragFrames[0]!) / 1000);
  const dragPass = dragFps >= DRAG_FPS_BUDGET;
  results.push(dragPass);
  console.log(
    `dashboard studio drag, a clip of the ${CLIPS}-clip project carried along the lane for ` +
      `${((dragFrames.at(-1)! - dragFrames[0]!) / 1000).toFixed(1)} s (load ${load1()}):\n` +
      `  ${dragFps.toFixed(1)} frames per second, frame gap p50 ${ms(percentile(dragGaps, 0.5))} ` +
      `p95 ${ms(percentile(dragGaps, 0.95))} max ${ms(dragGaps.at(-1)!)} ms ` +
      `[budget: ≥ ${DRAG_FPS_BUDGET} fps: ${verdict(dragPass, `drag >= ${DRAG_FPS_BUDGET} frames per second`, `${dragFps.toFixed(1)} fps`)}]`,
  );
  // The preview playing: a 30 fps frame is dropped when no animation frame comes within its slot.
  const preview = page.getByRole('region', { name: 'Preview', exact: true });
  await preview.getByRole('button', { name: 'Play', exact: true }).waitFor();
  const playFrames = await frameTimes(async () => {
    await preview.getByRole('button', { name: 'Play', exact: true }).click();
    await new Promise((resolve) => setTimeout(resolve, PLAY_MS));
    await preview.getByRole('button', { name: 'Pause', exact: true }).click();
  });
  const slotMs = 1000 / 30;
  const playedMs = playFrames.at(-1)! - playFrames[0]!;
  const dropped = gaps(playFrames).reduce((sum, gap) => sum + Math.max(0, Math.round(gap / slotMs) - 1), 0);
  const dropShare = dropped / (playedMs / slotMs);
  const playPass = dropShare < PLAY_DROP_BUDGET;
  results.push(playPass);
  console.log(
    `dashboard studio preview, ${CLIPS} image clips played for ${(playedMs / 1000).toFixed(1)} s (load ${load1()}):\n` +
      `  ${dropped} of ${Math.round(playedMs / slotMs)} frames at 30 fps dropped (${(dropShare * 100).toFixed(2)} %) ` +
      `[budget: < ${PLAY_DROP_BUDGET * 100} %: ${verdict(playPass, `preview playback drops < ${PLAY_DROP_BUDGET * 100} % of frames`, `${(dropShare * 100).toFixed(2)} %`)}]`,
  );

  // ---- 2c. The page's JavaScript heap after SOAK_MIN minutes of playback and edits ----
  const cdp = await page.context().newCDPSession(page);
  const heapAfterGc = async (): Promise<number> => {
    await cdp.send('HeapProfiler.collectGarbage');
    return (await cdp.send('Runtime.getHeapUsage')).usedSize;
  };
  const play = preview.getByRole('button', { name: 'Play', exact: true });
  const pause = preview.getByRole('button', { name: 'Pause', exact: true });
  const round = async () => {
    await play.click();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Playing past the video's end stops it on its own (the next Play starts it again from 0).
    if (await pause.isVisible()) await pause.click({ timeout: 2000 }).catch(() => undefined);
    // A click on Pause that landed as the video ended was a Play (from 0): that playback is stopped too.
    if (await pause.isVisible()) await pause.click();
    await play.waitFor();
    // An edit and its undo, each a REST edit with its event and re-read.
    await videoLane.getByRole('button').first().focus();
    await page.keyboard.press('Alt+ArrowRight');
    await new Promise((resolve) => setTimeout(resolve, 300));
    await page.keyboard.press('Control+z');
    await new Promise((resolve) => setTimeout(resolve, 300));
  };
  const roundsFor = async (minutes: number) => {
    const until = Date.now() + minutes * 60_000;
    let rounds = 0;
    for (; Date.now() < until; rounds++) await round();
    return rounds;
  };
  const heapLoaded = await heapAfterGc();
  const warmRounds = await roundsFor(WARM_MIN);
  const heapStart = await heapAfterGc();
  const summaryStart = await heapSummary(cdp);
  const rounds = await roundsFor(SOAK_MIN);
  const heapEnd = await heapAfterGc();
  const summaryEnd = await heapSummary(cdp);
  const heapGrowth = heapEnd / heapStart - 1;
  const heapPass = heapGrowth <= HEAP_GROWTH_BUDGET;
  results.push(heapPass);
  const kb = (bytes: number) => `${bytes >= 0 ? '+' : ''}${(bytes / 1024).toFixed(0)} KB`;
  const [kindsStart, kindsEnd] = [heapKinds(summaryStart), heapKinds(summaryEnd)];
  console.log(
    `dashboard studio heap, ${SOAK_MIN} min of playback and edits after ${WARM_MIN} min of the same (${warmRounds} + ${rounds} rounds of 1.5 s playing, a move and its undo; load ${load1()}):\n` +
      `  ${(heapStart / 1e6).toFixed(2)} MB → ${(heapEnd / 1e6).toFixed(2)} MB after a collection (${(heapGrowth * 100).toFixed(1)} %) ` +
      `[budget: ≤ +${HEAP_GROWTH_BUDGET * 100} %: ${verdict(heapPass, `heap after ${SOAK_MIN} min within +${HEAP_GROWTH_BUDGET * 100} %`, `${(heapGrowth * 100).toFixed(1)} %`)}]\n` +
      `  from before the warm-up: ${(heapLoaded / 1e6).toFixed(2)} MB → ${(heapEnd / 1e6).toFixed(2)} MB (${((heapEnd / heapLoaded - 1) * 100).toFixed(1)} %, not judged)\n` +
      `  snapshots, start → end: the page's JavaScript ${kb(kindsEnd.script - kindsStart.script)}, compiled code ` +
      `${kb(kindsEnd.code - kindsStart.code)}, the browser's own objects ${kb(kindsEnd.native - kindsStart.native)}; ` +
      `grew most: ${grownGroups(summaryStart, summaryEnd, 5).join('; ')}`,
  );

  // ---- 2d. The preview playing 12 video clips across cuts ----
  const videoProject = await editor.createProject({ name: 'Bench 12 video clips', aspect_ratio: '16:9' });
  for (const clip of await makeVideoClips()) {
    const up = await editor.upload(videoProject.id, clip, 'video/mp4');
    if (up.status !== 200) throw new Error(`upload: ${up.status} ${JSON.stringify(up.body)}`);
    const placed = await editor.addClip(videoProject.id, { track: 'video', asset_id: up.body.asset.id });
    if (placed.status !== 200) throw new Error(`clip: ${placed.status} ${JSON.stringify(placed.body)}`);
  }
  // Their pictures made (an asset.updated would re-read the project and restart playback).
  const picturesBy = Date.now() + 60_000;
  while (!(await editor.state(videoProject.id)).body.assets.every((a) => 'has_sound' in a.metadata)) {
    if (Date.now() > picturesBy) throw new Error('the video clips have no pictures after 60 s');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await page.goto(url(`/editor/${videoProject.id}`));
  await ready(CLIPS);
  // Every clip's element has its first picture (preload): the cuts are then not waiting for a download.
  await page.waitForFunction(
    (n) => {
      interface Doc {
        querySelectorAll(selector: string): ArrayLike<{ readyState: number }>;
      }
      const doc = (globalThis as unknown as { document: Doc }).document;
      const videos = Array.from(doc.querySelectorAll('.preview-sources video'));
      return videos.length === n && videos.every((video) => video.readyState >= 2);
    },
    CLIPS,
    { timeout: 60_000 },
  );
  await preview.getByLabel('Playhead', { exact: true }).fill(String(VIDEO_FROM_SEC));
  await page.waitForTimeout(500); // the paused frame's seek lands
  // In the page while it plays: each video element's presented frames (requestVideoFrameCallback) and each
  // animation frame whether the compositor's canvas shows another picture than at the one before (a hash of
  // four rows of its pixels: every row of testsrc2 changes from one frame to the next).
  await page.evaluate(`
    window.__videoFrames = [];
    window.__pictures = [];
    window.__watching = true;
    document.querySelectorAll('.preview-sources video').forEach((video, index) => {
      const onFrame = (now, meta) => {
        if (!window.__watching) return;
        window.__videoFrames.push([index, meta.presentedFrames, meta.mediaTime]);
        video.requestVideoFrameCallback(onFrame);
      };
      video.requestVideoFrameCallback(onFrame);
    });
    const canvas = document.querySelector('canvas.preview-canvas');
    const context = canvas.getContext('2d');
    let last = -1;
    const look = (at) => {
      if (!window.__watching) return;
      let hash = 0;
      for (let row = 1; row <= 4; row++) {
        const pixels = context.getImageData(0, Math.floor((canvas.height * row) / 5), canvas.width, 1).data;
        for (let i = 0; i < pixels.length; i++) hash = (hash * 31 + pixels[i]) | 0;
      }
      if (hash !== last) window.__pictures.push(at);
      last = hash;
      requestAnimationFrame(look);
    };
    requestAnimationFrame(look);
  `);
  const videoFrames = await frameTimes(async () => {
    await preview.getByRole('button', { name: 'Play', exact: true }).click();
    await new Promise((resolve) => setTimeout(resolve, VIDEO_PLAY_MS));
    await preview.getByRole('button', { name: 'Pause', exact: true }).click();
  });
  const watched = await page.evaluate(() => {
    const g = globalThis as unknown as {
      __watching: boolean;
      __videoFrames: [number, number, number][];
      __pictures: number[];
    };
    g.__watching = false;
    return { videoFrames: g.__videoFrames, pictures: g.__pictures };
  });
  const videoPlayedMs = videoFrames.at(-1)! - videoFrames[0]!;
  const videoDropped = gaps(videoFrames).reduce(
    (sum, gap) => sum + Math.max(0, Math.round(gap / slotMs) - 1),
    0,
  );
  const videoDropShare = videoDropped / (videoPlayedMs / slotMs);
  // Pictures from the first one playback drew (Play's own start, the sound's lead and the first decoded
  // frame, is latency, not smoothness) to the Pause.
  const pictures = watched.pictures.filter((at) => at > videoFrames[0]! && at <= videoFrames.at(-1)!);
  const picturesMs = videoFrames.at(-1)! - (pictures[0] ?? videoFrames[0]!);
  const picturesPerSec = pictures.length > 1 ? (pictures.length - 1) / (picturesMs / 1000) : 0;
  const pictureGaps = sorted(gaps(pictures));
  // Frames the elements presented, per element: presentedFrames counts them even between callbacks.
  const presented = new Map<number, { first: number; last: number; back: number; time: number }>();
  for (const [index, count, mediaTime] of watched.videoFrames) {
    const seen = presented.get(index);
    if (!seen) presented.set(index, { first: count, last: count, back: 0, time: mediaTime });
    else {
      if (mediaTime < seen.time) seen.back++;
      seen.last = count;
      seen.time = mediaTime;
    }
  }
  const presentedFrames = [...presented.values()].reduce((sum, one) => sum + one.last - one.first + 1, 0);
  // The callbacks the page saw: fewer than the frames presented when the page's thread was too busy to see each.
  const frameCallbacks = watched.videoFrames.length;
  const pulledBack = [...presented.values()].reduce((sum, one) => sum + one.back, 0);
  const videoDropPass = videoDropShare < PLAY_DROP_BUDGET;
  const advancePass = picturesPerSec >= VIDEO_FPS_BUDGET;
  results.push(videoDropPass, advancePass);
  console.log(
    `dashboard studio preview, ${CLIPS} video clips (5 s 1280x720 30 fps h264/AAC) played from ` +
      `${VIDEO_FROM_SEC} s for ${(videoPlayedMs / 1000).toFixed(1)} s, across ${Math.floor((VIDEO_FROM_SEC * 1000 + videoPlayedMs) / 5000) - Math.floor(VIDEO_FROM_SEC / 5)} cuts (load ${load1()}):\n` +
      `  ${videoDropped} of ${Math.round(videoPlayedMs / slotMs)} frames at 30 fps dropped (${(videoDropShare * 100).toFixed(2)} %) ` +
      `[budget: < ${PLAY_DROP_BUDGET * 100} %: ${verdict(videoDropPass, `video preview playback drops < ${PLAY_DROP_BUDGET * 100} % of frames`, `${(videoDropShare * 100).toFixed(2)} %`)}]\n` +
      `  the canvas showed ${pictures.length} pictures, ${picturesPerSec.toFixed(1)} a second from its first ` +
      `(${ms((pictures[0] ?? 0) - videoFrames[0]!)} ms after the Play click; longest unchanged ` +
      `${ms(pictureGaps.at(-1) ?? 0)} ms, p95 ${ms(pictureGaps.length ? percentile(pictureGaps, 0.95) : 0)} ms); the elements presented ` +
      `${presentedFrames} frames (${(presentedFrames / (videoPlayedMs / 1000)).toFixed(1)} a second) from ${presented.size} elements, ` +
      `${pulledBack} pulled back, ${frameCallbacks} seen by a frame callback [budget: ≥ ${VIDEO_FPS_BUDGET} pictures a second: ${verdict(advancePass, `video preview shows >= ${VIDEO_FPS_BUDGET} pictures a second`, `${picturesPerSec.toFixed(1)} a second`)}]`,
  );

  // ---- 3. Agent events drawn after they reach the socket ----
  await page.addInitScript(INIT);
  const probe = () => page.evaluate(() => (globalThis as unknown as { __probe: Probe }).__probe);
  const send = page.getByRole('button', { name: 'Send', exact: true });
  const until = async (what: string, check: () => Promise<boolean>) => {
    const deadline = Date.now() + TURN_MS;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`${what}: not after ${TURN_MS} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const turn = async (p: Page, instruction: string) => {
    await until('Send enabled', () => send.isEnabled());
    await p.getByLabel('Instruction', { exact: true }).fill(instruction);
    await send.click();
    await until('the turn starts', async () => !(await send.isEnabled()));
    await until('the turn ends', () => send.isEnabled());
  };
  const deltas: number[] = [];
  const clipsDrawn: number[] = [];
  const undrawn: string[] = [];
  let cycles = 0;
  while (deltas.length + clipsDrawn.length + undrawn.length < MIN_EVENTS && cycles < 6) {
    cycles++;
    const fresh = await editor.createProject({ name: `Bench events ${cycles}`, aspect_ratio: '16:9' });
    await page.goto(url(`/editor/${fresh.id}`));
    await page.getByLabel('Instruction', { exact: true }).waitFor();
    await page.waitForTimeout(300); // the socket's connect and replay
    await page.evaluate(() => {
      (globalThis as unknown as { __probe: Probe }).__probe.armed = true;
    });
    await turn(page, `a 3-scene video about a lighthouse, take ${cycles}`);
    for (let scene = 0; scene < 3; scene++) await turn(page, 'continue');
    await page.waitForTimeout(300); // the last drawing
    const { arrived, drawn } = await probe();
    for (const [seq, event] of Object.entries(arrived)) {
      const at = drawn[seq];
      if (at === undefined) undrawn.push(`${event.type} seq ${seq}`);
      else (event.type === 'assistant.delta' ? deltas : clipsDrawn).push(at - event.at);
    }
  }
  const all = sorted([...deltas, ...clipsDrawn]);
  const p99 = all.length > 0 ? percentile(all, 0.99) : Infinity;
  const eventPass = p99 <= EVENT_BUDGET_MS && undrawn.length === 0 && all.length >= MIN_EVENTS;
  results.push(eventPass);
  const stats = (values: number[]) => {
    const s = sorted(values);
    return s.length === 0
      ? 'none'
      : `p50 ${ms(percentile(s, 0.5))} p99 ${ms(percentile(s, 0.99))} max ${ms(s.at(-1)!)} ms`;
  };
  console.log(
    `dashboard agent events, socket message → in the DOM (${cycles} builtin 3-scene conversations, load ${load1()}):\n` +
      `  assistant.delta → text drawn (${deltas.length}): ${stats(deltas)}\n` +
      `  clip.created → clip drawn (${clipsDrawn.length}): ${stats(clipsDrawn)}\n` +
      `  all (${all.length}): ${stats(all)}; never drawn: ${undrawn.length}${undrawn.length ? ` (${undrawn.slice(0, 5).join(', ')})` : ''} ` +
      `[budget: p99 ≤ ${EVENT_BUDGET_MS} ms over ≥ ${MIN_EVENTS} events: ` +
      `${verdict(eventPass, `agent event drawn p99 <= ${EVENT_BUDGET_MS} ms over >= ${MIN_EVENTS} events, all drawn`, `${ms(p99)} ms over ${all.length} events, ${undrawn.length} never drawn`)}]`,
  );
} finally {
  await browser.close();
  await service.stop();
  await mongo.stop();
}
process.exit(results.length === 8 && results.every(Boolean) ? 0 : 1);
