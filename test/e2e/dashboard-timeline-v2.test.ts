// The editor page's second-edition fields in Chromium (docs/dashboard.md "The timeline"), found by role and
// label only: the five lanes of the studio's timeline, each clip's fields in the inspector once it is selected; a text clip added through the text track's form (several lines, its
// look, its timing and fades) read back by REST, its markup shown as text; each clip offering the fields that
// apply to it; a transition, a motion and a speed set through a clip's fields and read back by REST; a text
// clip edited back to its style's position; an export at preview quality; the library's picture of an image
// taken from its poster; axe and the CSP on the page.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { makeMedia, makeVideo, type Asset, type Clip, type ProjectState } from '../helpers/editor.ts';
import { runAxe, seriousViolations, skipWithoutChromium } from '../helpers/chromium.ts';
import { startEditorBrowser, untilOnPages, type EditorBrowser } from '../helpers/editor-browser.ts';

/** Markup that would set window.__xss if it were ever parsed as HTML. */
const XSS = '<img src=x onerror=window.__xss=1>';
/** Two lines, markup in the first: shown as text, stored as typed. */
const TITLE = `Harbour lights ${XSS}\nSecond line`;
/** Liveness bounds, not budgets: the machine's cores are shared, exports run ffmpeg. */
const EDIT_MS = 15_000;
const EXPORT_MS = 120_000;
const LANES = ['Video track', 'Text track', 'Voice track', 'Sound effects track', 'Music track'];

describe('the editor page, second edition, in Chromium', { skip: skipWithoutChromium() }, () => {
  let studio: EditorBrowser;
  let page: Page;
  let editor: EditorBrowser['editor'];
  let projectId = '';
  let image: Asset;

  before(async () => {
    studio = await startEditorBrowser({ db: 'dashboard_timeline_v2' });
    ({ page, editor } = studio);
    const project = await editor.createProject({ name: 'Harbour', aspect_ratio: '16:9' });
    projectId = project.id;
    image = await studio.upload(projectId, makeMedia('png', { colour: 'red' }), 'image/png', 'Red card');
    const video = await studio.upload(projectId, makeVideo(), 'video/mp4', 'Test pattern');
    for (const body of [
      { track: 'video', asset_id: image.id, duration_sec: 2 },
      { track: 'video', asset_id: video.id, duration_sec: 2 },
    ]) {
      const answer = await editor.addClip(projectId, body);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
    }
    page.setDefaultTimeout(EDIT_MS);
  });

  after(async () => {
    await studio?.stop();
  });

  const lane = (name: string) =>
    page.getByRole('region', { name: 'Timeline', exact: true }).getByRole('group', { name, exact: true });
  const form = (name: string) => page.getByRole('form', { name, exact: true });
  /** Selects the `n`th clip of a lane on the timeline: the inspector then shows its form. */
  const select = async (laneName: string, n: number): Promise<void> => {
    await lane(laneName)
      .getByRole('button', { name: new RegExp(`^${n}: `) })
      .click();
  };
  /** The list item of the clip whose form is `name` (`Video clip 2`, `Text clip 1`). */
  const clipItem = (name: string) => page.getByRole('listitem').filter({ has: form(name) });
  const field = (scope: Locator, label: string) => scope.getByLabel(label, { exact: true });
  const xss = () => page.evaluate(() => (globalThis as unknown as { __xss?: unknown }).__xss);

  async function state(): Promise<ProjectState> {
    const answer = await editor.state(projectId);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body;
  }
  const clipsOf = async (track: string): Promise<Clip[]> =>
    (await state()).clips.filter((c) => c.track === track).sort((a, b) => a.idx - b.idx);

  /** Polls `check` until it holds; an alert shown on the page fails at once with its text. */
  const eventually = (what: string, check: () => Promise<boolean>, limitMs = EDIT_MS) =>
    untilOnPages({ 'the page': page }, what, check, limitMs);

  it('signs in to the project and shows its five tracks, the text track empty', async () => {
    await studio.signIn(`/editor/${projectId}`);
    await page.getByRole('heading', { level: 1, name: 'Harbour', exact: true }).waitFor();
    for (const name of LANES) await lane(name).waitFor();
    await lane('Video track').getByRole('button', { name: '2: Test pattern, 2 s', exact: true }).waitFor();
    assert.equal(await lane('Text track').getByRole('button').count(), 0, 'the text lane is shown empty');
    assert.doesNotMatch(await page.locator('body').innerText(), /four tracks/i);
  });

  it('offers each clip the fields that apply to it', async () => {
    const still = form('Video clip 1');
    const moving = form('Video clip 2');
    await select('Video track', 1);
    await still.waitFor();
    for (const label of ['Transition', 'Transition length (s)', 'Motion', 'Trim start (s)', 'Volume'])
      assert.equal(await field(still, label).count(), 1, `an image clip has ${label}`);
    for (const label of ['Speed', 'Fade in (s)', 'Fade out (s)', 'Text'])
      assert.equal(await field(still, label).count(), 0, `an image clip has no ${label}`);
    await select('Video track', 2);
    await moving.waitFor();
    for (const label of ['Transition', 'Speed', 'Fade in (s)', 'Fade out (s)', 'Volume'])
      assert.equal(await field(moving, label).count(), 1, `a video clip has ${label}`);
    for (const label of ['Motion', 'Text'])
      assert.equal(await field(moving, label).count(), 0, `a video clip has no ${label}`);
    assert.equal(await field(moving, 'Transition').inputValue(), '', 'no transition: a cut');
  });

  it('adds a text clip through the form: shown in the text track as text, stored as typed', async () => {
    const add = form('New text clip');
    await field(add, 'Text').fill(TITLE);
    await field(add, 'Style').selectOption('lower_third');
    await field(add, 'Position').selectOption('top');
    await field(add, 'Color').fill('#ff8800');
    await field(add, 'Background').selectOption('none');
    await field(add, 'Start (s)').fill('0.5');
    await field(add, 'Duration (s)').fill('2.5');
    await field(add, 'Fade in (s)').fill('0.2');
    await field(add, 'Fade out (s)').fill('0.4');
    await add.getByRole('button', { name: 'Add text', exact: true }).click();

    const item = clipItem('Text clip 1');
    await eventually('the text clip in the text track', () =>
      lane('Text track').getByRole('button').first().isVisible(),
    );
    assert.ok(await lane('Text track').getByText('Second line').isVisible());
    await select('Text track', 1);
    await item.waitFor();
    assert.ok((await item.innerText()).includes(`Harbour lights ${XSS}`), await item.innerText());
    assert.equal(await xss(), undefined);
    assert.equal(await field(add, 'Text').inputValue(), '', 'the form is ready for the next text');

    const [text] = await clipsOf('text');
    assert.ok(text, 'the text clip is in the state');
    assert.equal(text.asset_id, null);
    assert.equal(text.text, TITLE);
    assert.equal(text.style, 'lower_third');
    assert.equal(text.position, 'top');
    assert.equal(text.color?.toLowerCase(), '#ff8800');
    assert.equal(text.background, 'none');
    assert.equal(text.start_sec, 0.5);
    assert.equal(text.duration_sec, 2.5);
    assert.equal(text.fade_in_sec, 0.2);
    assert.equal(text.fade_out_sec, 0.4);

    const own = form('Text clip 1');
    for (const label of ['Text', 'Style', 'Position', 'Color', 'Background', 'Fade in (s)', 'Start (s)'])
      assert.equal(await field(own, label).count(), 1, `a text clip has ${label}`);
    for (const label of ['Volume', 'Trim start (s)', 'Transition', 'Motion', 'Speed'])
      assert.equal(await field(own, label).count(), 0, `a text clip has no ${label}`);
  });

  it("edits the text clip: new words, and its position back to the style's", async () => {
    const own = form('Text clip 1');
    await field(own, 'Text').fill('Closing title');
    await field(own, 'Position').selectOption('');
    await own.getByRole('button', { name: 'Apply', exact: true }).click();
    await eventually(
      'the edited text in the state',
      async () => (await clipsOf('text'))[0]?.text === 'Closing title',
    );
    const [text] = await clipsOf('text');
    assert.equal(text?.position, 'bottom', "a lower third's own position");
    assert.equal(text?.style, 'lower_third', 'unchanged fields are kept');
    await eventually('the edited text on the page', () =>
      lane('Text track').getByText('Closing title').first().isVisible(),
    );
  });

  it('sets a transition on the second video clip through its select', async () => {
    await select('Video track', 2);
    const moving = form('Video clip 2');
    await field(moving, 'Transition').selectOption('fade');
    await field(moving, 'Transition length (s)').fill('0.5');
    await moving.getByRole('button', { name: 'Apply', exact: true }).click();
    await eventually(
      'the transition in the state',
      async () => (await clipsOf('video'))[1]?.transition_in !== null,
    );
    assert.deepEqual((await clipsOf('video'))[1]?.transition_in, { type: 'fade', duration_sec: 0.5 });
    // The page re-read the clip before any further change to it (its form resets when the clip changes).
    await eventually('the transition on the page', async () =>
      /fade 0\.5 s in/.test(await clipItem('Video clip 2').innerText()),
    );
    assert.equal(await field(moving, 'Transition').inputValue(), 'fade');
  });

  it("sets the image clip's motion and the video clip's speed", async () => {
    await select('Video track', 1);
    const still = form('Video clip 1');
    await field(still, 'Motion').selectOption('zoom_in');
    await still.getByRole('button', { name: 'Apply', exact: true }).click();
    await eventually(
      'the motion in the state',
      async () => (await clipsOf('video'))[0]?.motion === 'zoom_in',
    );

    await select('Video track', 2);
    const moving = form('Video clip 2');
    await field(moving, 'Speed').fill('2');
    await moving.getByRole('button', { name: 'Apply', exact: true }).click();
    await eventually('the speed in the state', async () => (await clipsOf('video'))[1]?.speed === 2);
    const clips = await clipsOf('video');
    assert.deepEqual(clips[1]?.transition_in, { type: 'fade', duration_sec: 0.5 }, 'the transition kept');
    assert.equal(clips[0]?.speed, null, 'speed does not apply to an image clip');
  });

  it('shows the image in the library from its poster', async () => {
    let poster = '';
    await eventually('the poster of the image', async () => {
      const asset = (await state()).assets.find((a) => a.id === image.id);
      poster = typeof asset?.metadata.poster_url === 'string' ? asset.metadata.poster_url : '';
      return poster !== '';
    });
    const picture = page
      .getByRole('region', { name: 'Library', exact: true })
      .getByRole('img', { name: 'Red card', exact: true });
    await eventually('the poster in the library', async () => (await picture.getAttribute('src')) === poster);
  });

  it('exports at preview quality', async () => {
    const panel = page.getByRole('region', { name: 'Preview and export', exact: true });
    await field(panel, 'Quality').selectOption('preview');
    const sent = page.waitForRequest(
      (r) => r.method() === 'POST' && new URL(r.url()).pathname.endsWith(`/projects/${projectId}/export`),
    );
    await panel.getByRole('button', { name: 'Export', exact: true }).click();
    const body = (await sent).postDataJSON() as { quality?: string; fit?: string };
    assert.equal(body.quality, 'preview');
    await eventually(
      'the preview in the panel',
      () => panel.getByText('Preview exported').isVisible(),
      EXPORT_MS,
    );
    assert.ok(await panel.getByLabel('Latest export', { exact: true }).isVisible());
    const exported = (await state()).assets.filter((a) => a.source === 'export');
    assert.equal(exported.length, 1);
    assert.equal(exported[0]?.metadata.quality, 'preview');
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
