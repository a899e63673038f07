// The studio's horizontal timeline in Chromium (docs/dashboard.md "The timeline"), found by role and
// label only: the five lanes and the clips' names; clips drawn to scale; a red, a green and a blue image each
// showing its colour; a mouse drag reordering a video clip and an edge drag trimming one; Alt+Arrow moving and
// Shift+Arrow trimming; Undo and Redo, an undo giving a clip back its length to the end; a split at the
// playhead, and one stopped part-way taken back and said; a 409 re-read and said; the inspector; the tap path
// on a phone; an asset dropped on a lane; axe and the CSP. The timeline is photographed into
// test-results/screenshots/ once its pictures are in.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Locator, Page } from 'playwright-core';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { makeMedia, type Clip, type ProjectState } from '../helpers/editor.ts';
import { startEditorBrowser, untilOnPages, type EditorBrowser } from '../helpers/editor-browser.ts';
import { runAxe, seriousViolations, skipWithoutChromium } from '../helpers/chromium.ts';

/** Liveness bound, not a budget: the machine's cores are shared. */
const EDIT_MS = 15_000;
const LANES = ['Video track', 'Text track', 'Voice track', 'Sound effects track', 'Music track'];
const CHANGED = 'The project changed; reloaded';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCREENSHOTS = join(ROOT, 'test-results', 'screenshots');
const DOC_SCREENSHOTS = join(ROOT, 'docs', 'screenshots');

/** The RGB of the middle pixel of a PNG, decoded by the resolved ffmpeg. */
function middlePixel(png: Buffer, width: number, height: number): [number, number, number] {
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH });
  const raw = execFileSync(
    ffmpeg,
    ['-v', 'error', '-i', 'pipe:0', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'],
    { input: png, maxBuffer: 64 * 1024 * 1024 },
  );
  const at = (Math.floor(height / 2) * width + Math.floor(width / 2)) * 3;
  return [raw[at] ?? -1, raw[at + 1] ?? -1, raw[at + 2] ?? -1];
}

describe('the studio timeline, in Chromium', { skip: skipWithoutChromium() }, () => {
  let studio: EditorBrowser;
  let page: Page;
  let editor: EditorBrowser['editor'];
  let projectId = '';
  let toneId = '';
  before(async () => {
    studio = await startEditorBrowser({
      db: 'dashboard_studio_timeline',
      browser: { viewport: { width: 1400, height: 1000 } },
    });
    ({ page, editor } = studio);
    const project = await editor.createProject({ name: 'Colours', aspect_ratio: '16:9' });
    projectId = project.id;
    const upload = (data: Buffer, type: string, name: string) => studio.upload(projectId, data, type, name);
    const red = await upload(makeMedia('png', { colour: 'red' }), 'image/png', 'Red');
    const green = await upload(makeMedia('png', { colour: 'lime' }), 'image/png', 'Green');
    const blue = await upload(makeMedia('png', { colour: 'blue' }), 'image/png', 'Blue');
    const tone = await upload(makeMedia('wav', { seconds: 3 }), 'audio/wav', 'Tone');
    toneId = tone.id;
    for (const body of [
      { track: 'video', asset_id: red.id, duration_sec: 2 },
      { track: 'video', asset_id: green.id, duration_sec: 4 },
      { track: 'video', asset_id: blue.id, duration_sec: 1 },
      { track: 'text', text: 'Hello', start_sec: 0, duration_sec: 2.5 },
      { track: 'voice', asset_id: tone.id, start_sec: 1 },
    ]) {
      const answer = await editor.addClip(projectId, body);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
    }

    page.setDefaultTimeout(EDIT_MS);
  });

  after(() => studio?.stop());

  const timeline = () => page.getByRole('region', { name: 'Timeline', exact: true });
  const lane = (name: string) => timeline().getByRole('group', { name, exact: true });
  const clip = (laneName: string, name: string) => lane(laneName).getByRole('button', { name, exact: true });
  const button = (name: string) => page.getByRole('button', { name, exact: true });

  async function state(): Promise<ProjectState> {
    const answer = await editor.state(projectId);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body;
  }
  const clipsOf = async (track: string): Promise<Clip[]> =>
    (await state()).clips.filter((c) => c.track === track).sort((a, b) => a.idx - b.idx);
  const assetNames = async (clips: Clip[]): Promise<string[]> => {
    const assets = (await state()).assets;
    return clips.map((c) => String(assets.find((a) => a.id === c.asset_id)?.metadata.name));
  };
  const videoOrder = async () => assetNames(await clipsOf('video'));

  /** Polls `check` until it holds; an alert shown on the page fails at once with its text. */
  const eventually = (what: string, check: () => Promise<boolean>, limitMs = EDIT_MS) =>
    untilOnPages({ 'the page': page }, what, check, limitMs);

  async function box(locator: Locator): Promise<{ x: number; y: number; width: number; height: number }> {
    const found = await locator.boundingBox();
    assert.ok(found, 'the element has a box');
    return found;
  }

  /** A mouse drag from one point to another in small steps, as a hand does it. */
  async function drag(from: { x: number; y: number }, to: { x: number; y: number }): Promise<void> {
    await page.mouse.move(from.x, from.y);
    await page.mouse.down();
    await page.mouse.move(to.x, to.y, { steps: 12 });
    await page.mouse.up();
  }

  it('signs in and shows the five lanes, each clip named by its place, asset or text and duration', async () => {
    await studio.signIn(`/editor/${projectId}`);
    for (const name of LANES) await lane(name).waitFor();
    await clip('Video track', '1: Red, 2 s').waitFor();
    await clip('Video track', '2: Green, 4 s').waitFor();
    await clip('Video track', '3: Blue, 1 s').waitFor();
    await clip('Text track', '1: Hello, 2.5 s').waitFor();
    await clip('Voice track', '1: Tone, 3 s').waitFor();
    for (const empty of ['Sound effects track', 'Music track'])
      assert.equal(await lane(empty).getByRole('button').count(), 0, `${empty} is shown empty`);
    for (const name of ['Undo', 'Redo', 'Split', 'Zoom in', 'Zoom out'])
      assert.equal(await timeline().getByRole('button', { name, exact: true }).count(), 1, name);
  });

  it('draws clips to scale on one time axis, and zooms', async () => {
    const red = await box(clip('Video track', '1: Red, 2 s'));
    const green = await box(clip('Video track', '2: Green, 4 s'));
    const blue = await box(clip('Video track', '3: Blue, 1 s'));
    const text = await box(clip('Text track', '1: Hello, 2.5 s'));
    const tone = await box(clip('Voice track', '1: Tone, 3 s'));
    const perSec = red.width / 2;
    assert.ok(Math.abs(green.width / perSec - 4) < 0.1, `green ${green.width / perSec} s wide`);
    assert.ok(Math.abs(blue.width / perSec - 1) < 0.1, `blue ${blue.width / perSec} s wide`);
    assert.ok(Math.abs(text.width / perSec - 2.5) < 0.1, `text ${text.width / perSec} s wide`);
    assert.ok(
      Math.abs((tone.x - red.x) / perSec - 1) < 0.1,
      'the voice clip starts at 1 s, under the red one',
    );
    assert.ok(Math.abs(green.x - (red.x + red.width)) < 2, 'green follows red');
    await timeline().getByRole('button', { name: 'Zoom in', exact: true }).click();
    await eventually('twice as wide', async () => {
      const zoomed = await box(clip('Video track', '1: Red, 2 s'));
      return Math.abs(zoomed.width - red.width * 2) < 2;
    });
    await timeline().getByRole('button', { name: 'Zoom out', exact: true }).click();
    await eventually(
      'back to its width',
      async () => Math.abs((await box(clip('Video track', '1: Red, 2 s'))).width - red.width) < 2,
    );
  });

  it('shows each image clip in its own colour', async () => {
    const expected: [string, [number, number, number]][] = [
      ['1: Red, 2 s', [255, 0, 0]],
      ['2: Green, 4 s', [0, 255, 0]],
      ['3: Blue, 1 s', [0, 0, 255]],
    ];
    for (const [name, rgb] of expected) {
      let seen: number[] = [];
      await eventually(`${name} in its colour`, async () => {
        const element = clip('Video track', name);
        const size = await box(element);
        const shot = await element.screenshot();
        // The screenshot is in device pixels (scale 1 here), as large as the element's box.
        seen = middlePixel(shot, Math.round(size.width), Math.round(size.height));
        return seen.every((value, i) => Math.abs(value - (rgb[i] ?? 0)) < 40);
      }).catch((err: unknown) => assert.fail(`${String(err)}; the middle pixel is ${seen.join(',')}`));
    }
    mkdirSync(SCREENSHOTS, { recursive: true });
    await timeline().screenshot({ path: join(SCREENSHOTS, 'studio-timeline-1400.png') });
    // The whole editor at a desktop's and a phone's width; MF_UPDATE_SCREENSHOTS=1 also renews the README's.
    for (const [width, height] of [
      [1280, 900],
      [390, 844],
    ] as const) {
      await page.setViewportSize({ width, height });
      await timeline().waitFor();
      const shot = await page.screenshot({ fullPage: true });
      writeFileSync(join(SCREENSHOTS, `editor-${width}.png`), shot);
      if (process.env.MF_UPDATE_SCREENSHOTS === '1')
        writeFileSync(join(DOC_SCREENSHOTS, `editor-${width}.png`), shot);
    }
    await page.setViewportSize({ width: 1400, height: 1000 });
  });

  it('reorders a video clip by dragging it, and trims one by dragging its end edge', async () => {
    const blue = await box(clip('Video track', '3: Blue, 1 s'));
    const red = await box(clip('Video track', '1: Red, 2 s'));
    await drag(
      { x: blue.x + blue.width / 2, y: blue.y + blue.height / 2 },
      { x: red.x + 5, y: red.y + red.height / 2 },
    );
    await eventually('blue first', async () => (await videoOrder()).join() === 'Blue,Red,Green');
    await clip('Video track', '2: Red, 2 s').waitFor();

    // Red is now 1 s to 3 s: its end dragged one second on lands on 4 s (the voice clip's end: a snap).
    const moved = await box(clip('Video track', '2: Red, 2 s'));
    const perSec = moved.width / 2;
    const y = moved.y + moved.height / 2;
    await drag({ x: moved.x + moved.width - 3, y }, { x: moved.x + moved.width - 3 + perSec, y });
    await eventually('red 3 s long', async () => {
      const redClip = (await clipsOf('video'))[1];
      return redClip?.duration_sec !== undefined && Math.abs((redClip.duration_sec ?? 0) - 3) < 0.1;
    });
    await clip('Video track', '2: Red, 3 s').waitFor();
    assert.equal((await videoOrder()).join(), 'Blue,Red,Green', 'a trim does not reorder');
  });

  it('moves with Alt+Arrow and trims with Shift+Arrow', async () => {
    await clip('Text track', '1: Hello, 2.5 s').focus();
    await page.keyboard.press('Alt+ArrowRight');
    await eventually(
      'the text half a second later',
      async () => (await clipsOf('text'))[0]?.start_sec === 0.5,
    );
    await clip('Text track', '1: Hello, 2.5 s').focus();
    await page.keyboard.press('Shift+ArrowLeft');
    await eventually(
      'the text half a second shorter',
      async () => (await clipsOf('text'))[0]?.duration_sec === 2,
    );
    await clip('Video track', '1: Blue, 1 s').focus();
    await page.keyboard.press('Alt+ArrowRight');
    await eventually('blue one place on', async () => (await videoOrder()).join() === 'Red,Blue,Green');
  });

  it('undoes and redoes the edits, and the REST state follows', async () => {
    const undo = timeline().getByRole('button', { name: 'Undo', exact: true });
    const redo = timeline().getByRole('button', { name: 'Redo', exact: true });
    await undo.click();
    await eventually('blue back first', async () => (await videoOrder()).join() === 'Blue,Red,Green');
    await undo.click();
    await eventually('the text 2.5 s again', async () => (await clipsOf('text'))[0]?.duration_sec === 2.5);
    await undo.click();
    await eventually('the text at 0 again', async () => (await clipsOf('text'))[0]?.start_sec === 0);
    await redo.click();
    await eventually('the text at 0.5 again', async () => (await clipsOf('text'))[0]?.start_sec === 0.5);
    await page.keyboard.press('Control+Shift+Z');
    await eventually('the text 2 s again', async () => (await clipsOf('text'))[0]?.duration_sec === 2);
    await page.keyboard.press('Control+z');
    await eventually(
      'the text 2.5 s, by Ctrl+Z',
      async () => (await clipsOf('text'))[0]?.duration_sec === 2.5,
    );
  });

  it('undoes a trim of a clip that played to its end: to its end again, still selected', async () => {
    const tone = async () => (await clipsOf('voice'))[0];
    assert.equal((await tone())?.duration_sec, null, 'the voice clip plays to the end of its sound');
    await clip('Voice track', '1: Tone, 3 s').click();
    await page.keyboard.press('Shift+ArrowLeft');
    await eventually('the tone 2.5 s', async () => (await tone())?.duration_sec === 2.5);
    await timeline().getByRole('button', { name: 'Undo', exact: true }).click();
    await eventually('the tone to its end again', async () => (await tone())?.duration_sec === null);
    const back = await tone();
    assert.equal(back?.start_sec, 1, 'at its place');
    const shown = clip('Voice track', '1: Tone, 3 s');
    await shown.waitFor();
    await eventually(
      'the re-added clip selected',
      async () => (await shown.getAttribute('aria-pressed')) === 'true',
    );
  });

  it('splits the selected clip at the playhead, and undoes the split', async () => {
    // The ruler is clicked at 2 s (above the red clip, which runs from 1 s to 4 s), then Red split there.
    await clip('Video track', '2: Red, 3 s').click();
    const red = await box(clip('Video track', '2: Red, 3 s'));
    const perSec = red.width / 3;
    const ruler = (await box(lane('Video track'))).y - 12; // the ruler runs above the first lane
    await page.mouse.click(red.x + perSec, ruler);
    await clip('Video track', '2: Red, 3 s').focus();
    await page.keyboard.press('s');
    await eventually('four video clips', async () => (await clipsOf('video')).length === 4);
    const split = await clipsOf('video');
    assert.deepEqual(await assetNames(split), ['Blue', 'Red', 'Red', 'Green']);
    assert.ok(Math.abs((split[1]?.duration_sec ?? 0) + (split[2]?.duration_sec ?? 0) - 3) < 0.01, 'halves');
    await button('Undo').click();
    // The undo deletes the rest, then gives Red its 3 s back: two calls, one after the other.
    await eventually('three again, Red 3 s long', async () => {
      const clips = await clipsOf('video');
      return clips.length === 3 && Math.abs((clips[1]?.duration_sec ?? 0) - 3) < 0.01;
    });
    await clip('Video track', '2: Red, 3 s').waitFor();
  });

  it('takes back a split whose second call is refused, re-reads the project and says so', async () => {
    // The split's first call (Red shortened) goes through; its second (the rest added) is refused.
    const clipsPath = '**/api/v1/media-studio/projects/*/clips';
    await page.route(clipsPath, async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      return route.fulfill({
        status: 400,
        contentType: 'application/json',
        body: JSON.stringify({ error: 'refused by the test' }),
      });
    });
    try {
      await clip('Video track', '2: Red, 3 s').focus();
      await page.keyboard.press('s');
      await page
        .getByRole('status')
        .filter({ hasText: 'The split stopped part-way (refused by the test)' })
        .waitFor();
    } finally {
      await page.unroute(clipsPath);
    }
    const clips = await clipsOf('video');
    assert.equal(clips.length, 3, 'no rest was added');
    assert.ok(Math.abs((clips[1]?.duration_sec ?? 0) - 3) < 0.01, 'Red has its 3 s back');
    await clip('Video track', '2: Red, 3 s').waitFor();
  });

  it('re-reads the project on a conflicting edit (409) and says so', async () => {
    // Another client changes the project while the page's edit is on its way: the page's If-Match is stale.
    const green = (await clipsOf('video'))[2];
    assert.ok(green);
    let interfered = false;
    await page.route('**/api/v1/media-studio/projects/*/clips/*', async (route) => {
      if (!interfered && route.request().method() === 'PATCH') {
        interfered = true;
        const other = await editor.patchClip(projectId, green.id, { duration_sec: 5 });
        assert.equal(other.status, 200, JSON.stringify(other.body));
      }
      await route.continue();
    });
    await clip('Video track', '3: Green, 4 s').focus();
    await page.keyboard.press('Shift+ArrowLeft');
    await page.getByText(CHANGED).waitFor();
    await page.unroute('**/api/v1/media-studio/projects/*/clips/*');
    assert.equal(
      (await clipsOf('video'))[2]?.duration_sec,
      5,
      "the other client's edit stands, not the page's",
    );
    await clip('Video track', '3: Green, 5 s').waitFor();
  });

  it('shows the selected clip in the inspector, with its fields', async () => {
    await clip('Video track', '3: Green, 5 s').click();
    const inspector = page.getByRole('region', { name: 'Clip inspector', exact: true });
    await inspector.getByRole('form', { name: 'Video clip 3', exact: true }).waitFor();
    assert.equal(await inspector.getByLabel('Motion', { exact: true }).count(), 1);
  });

  it('on a phone, scrolls the timeline sideways and offers every action by tapping', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    // The lanes are wider than the timeline's region: they scroll inside it, and the page stays 390 px wide.
    await eventually('the timeline within the phone', async () => (await box(timeline())).width <= 390);
    assert.ok((await box(lane('Video track'))).width > 390, 'the lanes are wider than the phone');
    assert.ok(
      (await page.evaluate<number>('document.documentElement.scrollWidth')) <= 390,
      'the page itself fits',
    );
    await clip('Video track', '1: Blue, 1 s').click();
    await timeline().getByRole('button', { name: 'Move right', exact: true }).click();
    await eventually('blue moved by a tap', async () => (await videoOrder()).join() === 'Red,Blue,Green');
    await clip('Video track', '2: Blue, 1 s').click();
    await timeline().getByRole('button', { name: 'Lengthen', exact: true }).click();
    await eventually('blue 1.5 s', async () => (await clipsOf('video'))[1]?.duration_sec === 1.5);
    await clip('Video track', '2: Blue, 1.5 s').click();
    await timeline().getByRole('button', { name: 'Delete', exact: true }).click();
    await eventually('blue deleted', async () => (await videoOrder()).join() === 'Red,Green');
    await button('Undo').click();
    await eventually('blue back', async () => (await videoOrder()).join() === 'Red,Blue,Green');
    await page.setViewportSize({ width: 1400, height: 1000 });
  });

  it('adds an asset dropped on a lane from the library, and undoes it', async () => {
    // The library sets the asset's id under its own type when one is dragged: the same drop, made in the page.
    const dataTransfer = await page.evaluateHandle(
      `(() => { const d = new DataTransfer(); d.setData('application/x-mediaforge-asset', ${JSON.stringify(toneId)}); return d; })()`,
    );
    await lane('Music track').dispatchEvent('dragover', { dataTransfer });
    await lane('Music track').dispatchEvent('drop', { dataTransfer });
    await eventually(
      'the tone on the music track',
      async () => (await clipsOf('music'))[0]?.asset_id === toneId,
    );
    await clip('Music track', '1: Tone, 3 s').waitFor();
    await button('Undo').click();
    await eventually('the music track empty again', async () => (await clipsOf('music')).length === 0);
  });

  it('has no serious accessibility violation, and no CSP violation or page error', async () => {
    const violations = seriousViolations(await runAxe(page));
    assert.deepEqual(
      violations.map((v) => `${v.id} (${v.impact}) ${v.help} — ${v.nodes.slice(0, 5).join(', ')}`),
      [],
    );
    assert.deepEqual(studio.problems, []);
  });
});
