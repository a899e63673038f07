// The studio's library grid and the chat's turn steps in Chromium (docs/dashboard.md "The library"), found by
// role and label only: posters that loaded and duration badges, a neutral tile for a sound, the search by name
// and by prompt, a long name cut on screen but whole in its title and accessible name, `Add to timeline` on the
// video track and on a chosen track (read back by REST), a tile's drag carrying its asset id, and a turn's
// steps shown live with its media progress and, once it ends, its cost; axe and the CSP on the page.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { startEditorBrowser, untilOnPages, type EditorBrowser } from '../helpers/editor-browser.ts';
import { balanceOf, makeMedia, makeVideo, type Asset, type ProjectState } from '../helpers/editor.ts';
import { runAxe, seriousViolations, skipWithoutChromium } from '../helpers/chromium.ts';

/** Liveness bounds, not budgets: the machine's cores are shared, sandbox renders run ffmpeg. */
const EDIT_MS = 15_000;
const TURN_MS = 60_000;
const LONG_NAME =
  'A very long asset name: the old stone pier at dusk, seen from the water, with every lamp lit along it';
const DRAG_TYPE = 'application/x-mediaforge-asset';

describe('the studio library and turn steps in Chromium', { skip: skipWithoutChromium() }, () => {
  let studio: EditorBrowser;
  let service: EditorBrowser['service'];
  let page: Page;
  let editor: EditorBrowser['editor'];
  let projectId = '';
  const assets: Record<string, Asset> = {};

  before(async () => {
    const mp4 = makeVideo({ sound: false });
    studio = await startEditorBrowser({
      db: 'dashboard_studio_library',
      env: {
        // Long enough for the turn to announce media progress (every 2 s) while the page watches.
        SANDBOX_VIDEO_MS: '4500',
        PROVIDER_POLL_INTERVAL_MS: '100',
      },
    });
    ({ service, page, editor } = studio);
    const project = await editor.createProject({ name: 'Pier', aspect_ratio: '16:9' });
    projectId = project.id;
    const upload = async (data: Buffer, type: string, name: string) => {
      assets[name] = await studio.upload(projectId, data, type, name);
    };
    await upload(makeMedia('png', { colour: 'red' }), 'image/png', 'Red card');
    await upload(mp4, 'video/mp4', 'Test pattern');
    await upload(makeMedia('wav', { seconds: 2 }), 'audio/wav', 'Bell');
    await upload(makeMedia('png', { colour: 'blue' }), 'image/png', LONG_NAME);

    page.setDefaultTimeout(EDIT_MS);
  });

  after(() => studio?.stop());

  const library = () => page.getByRole('region', { name: 'Library', exact: true });
  const chat = () => page.getByRole('region', { name: 'Chat with the director', exact: true });
  const tiles = () => library().getByRole('list', { name: 'Assets', exact: true }).getByRole('group');
  const tile = (name: string) => library().getByRole('group', { name, exact: true });
  const search = () => library().getByLabel('Search the library', { exact: true });

  async function state(): Promise<ProjectState> {
    const answer = await editor.state(projectId);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body;
  }

  /** Polls `check` until it holds; an alert shown on the page fails at once with its text. */
  const eventually = (what: string, check: () => Promise<boolean>, limitMs = EDIT_MS) =>
    untilOnPages({ 'the page': page }, what, check, limitMs);

  /** The image's natural width once it loaded (0 while it has not, or failed). */
  const naturalWidth = (image: Locator) =>
    image.evaluate((element) => (element as unknown as { naturalWidth: number }).naturalWidth);

  /** The names of the tiles shown, in order. */
  const shownNames = async (): Promise<string[]> =>
    Promise.all((await tiles().all()).map(async (t) => (await t.getAttribute('aria-label')) ?? ''));

  it('signs in to the project and shows every asset as a tile', async () => {
    await studio.signIn(`/editor/${projectId}`);
    await page.getByRole('heading', { level: 1, name: 'Pier', exact: true }).waitFor();
    await eventually('four tiles', async () => (await tiles().count()) === 4);
    assert.deepEqual(
      [...(await shownNames())].sort(),
      ['Bell', 'Red card', 'Test pattern', LONG_NAME].sort(),
    );
  });

  it('shows posters as images that loaded, duration badges, and a neutral tile for a sound', async () => {
    for (const name of ['Red card', 'Test pattern', LONG_NAME]) {
      const poster = tile(name).getByRole('img', { name, exact: true });
      await poster.scrollIntoViewIfNeeded();
      await eventually(`the poster of ${name} loaded`, async () => (await naturalWidth(poster)) > 0);
      const src = await poster.getAttribute('src');
      const asset = (await state()).assets.find((a) => a.id === assets[name]?.id);
      assert.equal(src, asset?.metadata.poster_url, `${name}: the poster is metadata.poster_url`);
    }
    // The badge reads "0:04" on screen and "Duration 0:04" to screen readers.
    assert.equal(await tile('Test pattern').getByText('Duration 0:04', { exact: true }).count(), 1);
    assert.equal(await tile('Bell').getByText('Duration 0:02', { exact: true }).count(), 1);
    assert.equal(
      await tile('Red card')
        .getByText(/\d:\d\d/)
        .count(),
      0,
      'a still has no duration',
    );
    assert.equal(await tile('Bell').getByRole('img').count(), 0, 'a sound has no poster');
    assert.equal(await tile('Bell').getByText('audio', { exact: true }).count(), 1);
  });

  it('cuts a long name with an ellipsis, whole in its title and its accessible name', async () => {
    const label = tile(LONG_NAME).getByText(LONG_NAME, { exact: true });
    assert.equal(await label.getAttribute('title'), LONG_NAME);
    const cut = await label.evaluate((element) => {
      const e = element as unknown as { scrollWidth: number; clientWidth: number };
      return e.scrollWidth > e.clientWidth;
    });
    assert.equal(cut, true, 'the name is wider than its tile: cut on screen');
    assert.equal(await tile(LONG_NAME).count(), 1, 'the tile is named by the whole name');
  });

  it('narrows the grid by name, ignoring case, and shows all again when cleared', async () => {
    await search().fill('RED ca');
    await eventually('only Red card', async () => (await shownNames()).join() === 'Red card');
    await search().fill('no such asset');
    await eventually('nothing', async () => (await tiles().count()) === 0);
    assert.ok(
      await library()
        .getByText(/Nothing in the library matches/)
        .isVisible(),
    );
    await search().fill('');
    await eventually('all four', async () => (await tiles().count()) === 4);
  });

  it('adds an asset to the video track, and a video to a track chosen for it', async () => {
    assert.equal(await tile('Red card').getByRole('combobox').count(), 0, 'an image fits one track only');
    const addRed = tile('Red card').getByRole('button', { name: 'Add to timeline', exact: true });
    await addRed.click();
    await eventually('the image on the video track', async () =>
      (await state()).clips.some((c) => c.track === 'video' && c.asset_id === assets['Red card']?.id),
    );
    // The button is busy until the page has re-read the project: the next edit's If-Match is then current
    // (sent sooner, it would be a stale revision, which the page answers with "The project changed").
    await eventually('the page caught up with the edit', () => addRed.isEnabled());
    await tile('Test pattern').getByLabel('Track for Test pattern', { exact: true }).selectOption('music');
    await tile('Test pattern').getByRole('button', { name: 'Add to timeline', exact: true }).click();
    await eventually('the video on the music track', async () =>
      (await state()).clips.some((c) => c.track === 'music' && c.asset_id === assets['Test pattern']?.id),
    );
  });

  it("drags a tile with its asset's id", async () => {
    await page.evaluate((type) => {
      interface DragEventLike {
        preventDefault(): void;
        dataTransfer: { getData(format: string): string } | null;
      }
      const w = globalThis as unknown as {
        __dropped: string[];
        document: { addEventListener(type: string, listener: (event: DragEventLike) => void): void };
      };
      w.__dropped = [];
      w.document.addEventListener('dragover', (event) => event.preventDefault());
      w.document.addEventListener('drop', (event) => {
        event.preventDefault();
        w.__dropped.push(event.dataTransfer?.getData(type) ?? '');
      });
    }, DRAG_TYPE);
    // Dropped on a tile next to it: both in view, so nothing scrolls while the drag runs.
    await tile('Red card').dragTo(tile('Bell'));
    const dropped = () => page.evaluate(() => (globalThis as unknown as { __dropped: string[] }).__dropped);
    await eventually('the drop', async () => (await dropped()).length > 0);
    assert.deepEqual(await dropped(), [assets['Red card']?.id]);
  });

  it("shows a turn's steps as they happen, its media progress, and what it cost", async () => {
    const send = chat().getByRole('button', { name: 'Send', exact: true });
    const instruction = chat().getByLabel('Instruction', { exact: true });
    const steps = () => chat().getByRole('list', { name: 'Steps of this turn', exact: true });

    let before = await balanceOf(service, studio.token);
    await instruction.fill('a 2-scene video about a harbour at night');
    await send.click();
    await eventually(
      'the storyboard',
      () => chat().getByText('Here is the storyboard').first().isVisible(),
      TURN_MS,
    );
    await eventually('the turn ends', () => send.isEnabled(), TURN_MS);
    let cost = before - (await balanceOf(service, studio.token));
    assert.equal(cost, 5);
    await eventually('the first turn cost', () =>
      steps().last().getByText(`This turn cost ${cost} credits.`, { exact: true }).isVisible(),
    );
    assert.match(await steps().last().innerText(), /Tool append_context: done/);

    before = await balanceOf(service, studio.token);
    await instruction.fill('continue');
    await send.click();
    // While the sandbox renders, the turn's generation shows with its progress, before the reply.
    const progress = chat().getByRole('progressbar');
    await eventually('the generation in progress', () => progress.first().isVisible(), TURN_MS);
    assert.match((await progress.first().getAttribute('aria-label')) ?? '', /^Generating video/);
    assert.equal(
      await chat()
        .getByText(/Scene 1 of 2 is on the timeline/)
        .count(),
      0,
      'not replied yet',
    );
    await eventually(
      'the reply',
      () =>
        chat()
          .getByText(/Scene 1 of 2 is on the timeline/)
          .first()
          .isVisible(),
      TURN_MS,
    );
    await eventually('the turn ends', () => send.isEnabled(), TURN_MS);
    cost = before - (await balanceOf(service, studio.token));
    assert.ok(cost > 5, `a turn with a generation costs more than 5 credits: ${cost}`);
    const last = steps().last();
    await eventually('the second turn cost', () =>
      last.getByText(`This turn cost ${cost.toLocaleString('en-US')} credits.`, { exact: true }).isVisible(),
    );
    const text = await last.innerText();
    assert.match(text, /Tool generate_video: done/);
    assert.match(text, new RegExp(`Generating video with \\S+ \\(${cost - 5} credits\\): done`));
    assert.equal(await chat().getByRole('progressbar').count(), 0, 'no generation left running');
    assert.equal(await steps().count(), 2, 'one list of steps per turn');
  });

  it('finds the generated scene by a word of its prompt only', async () => {
    const generated = (await state()).assets.find((a) => a.source === 'agent_generate');
    assert.ok(generated, 'the turn generated an asset');
    const prompt = String(generated.metadata.prompt);
    assert.match(prompt, /cinematic lighting$/);
    await search().fill('Cinematic LIGHTING');
    await eventually('only the generated scene', async () => (await tiles().count()) === 1);
    const name = (await shownNames())[0] ?? '';
    assert.ok(!/lighting/i.test(name), `matched by its prompt, not its shown name "${name}"`);
    await search().fill('');
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
