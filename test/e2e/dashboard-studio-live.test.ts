// One project open in two tabs of one signed-in Chromium (docs/dashboard.md "Live updates between tabs"), found
// by role and label only: a trim, a move, a delete, a text clip and an undo made in tab A through the studio
// show in tab B's timeline; an edit made through the REST API with the user's key, as another client or the
// agent makes it, shows in both; and a turn of the builtin director sent from tab A's chat shows its clip in
// tab B. Tab B is never reloaded (a mark left in its window stays, no navigation happens), and each wait is
// bounded: with live updates broken, tab B keeps what it first showed and the test fails.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { makeMedia, type Asset, type Clip, type ProjectState } from '../helpers/editor.ts';
import { startEditorBrowser, untilOnPages, type EditorBrowser } from '../helpers/editor-browser.ts';
import { skipWithoutChromium } from '../helpers/chromium.ts';

/** Liveness bounds, not budgets: the machine's cores are shared. */
const EDIT_MS = 15_000;
const TURN_MS = 60_000;
const MARK = 'tab B, never reloaded';

describe('the studio in two tabs, kept live by the project events', { skip: skipWithoutChromium() }, () => {
  let studio: EditorBrowser;
  let tabA: Page;
  let tabB: Page;
  let editor: EditorBrowser['editor'];
  let projectId = '';
  let blue: Asset;
  /** Loads of tab B's page after its first one (a reload would count). */
  let reloadsOfB = -1;

  before(async () => {
    studio = await startEditorBrowser({
      db: 'dashboard_studio_live',
      browser: { viewport: { width: 1400, height: 1000 } },
    });
    ({ page: tabA, editor } = studio);
    const project = await editor.createProject({ name: 'Two tabs', aspect_ratio: '16:9' });
    projectId = project.id;
    const upload = (data: Buffer, name: string) => studio.upload(projectId, data, 'image/png', name);
    const red = await upload(makeMedia('png', { colour: 'red' }), 'Red');
    const green = await upload(makeMedia('png', { colour: 'lime' }), 'Green');
    blue = await upload(makeMedia('png', { colour: 'blue' }), 'Blue');
    for (const body of [
      { track: 'video', asset_id: red.id, duration_sec: 2 },
      { track: 'video', asset_id: green.id, duration_sec: 4 },
    ]) {
      const answer = await editor.addClip(projectId, body);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
    }
    tabA.setDefaultTimeout(EDIT_MS);
    // The second tab shares the first one's profile, so its session cookie too.
    tabB = await studio.chromium.context.newPage();
    tabB.setDefaultTimeout(EDIT_MS);
    tabB.on('pageerror', (error) => studio.problems.push(`tab B: ${error.message}`));
    tabB.on('load', () => reloadsOfB++);
  });

  after(() => studio?.stop());

  const timeline = (tab: Page) => tab.getByRole('region', { name: 'Timeline', exact: true });
  const lane = (tab: Page, name: string) => timeline(tab).getByRole('group', { name, exact: true });
  const clip = (tab: Page, laneName: string, name: string | RegExp) =>
    lane(tab, laneName).getByRole('button', { name, exact: typeof name === 'string' });
  const clipCount = (tab: Page, laneName: string) => lane(tab, laneName).getByRole('button').count();

  async function state(): Promise<ProjectState> {
    const answer = await editor.state(projectId);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return answer.body;
  }
  const videoClips = async (): Promise<Clip[]> =>
    (await state()).clips.filter((c) => c.track === 'video').sort((a, b) => a.idx - b.idx);

  /** Polls `check` until it holds, at most `limitMs`; an alert shown in either tab fails at once. */
  const eventually = (what: string, check: () => Promise<boolean>, limitMs = EDIT_MS) =>
    untilOnPages({ 'tab A': tabA, 'tab B': tabB }, what, check, limitMs);
  /** Waits, bounded, until `locator` (in a tab that is not reloaded) is there. */
  const shows = (what: string, locator: Locator, limitMs = EDIT_MS) =>
    eventually(what, async () => (await locator.count()) > 0, limitMs);

  it('opens the project in two tabs of one signed-in browser', async () => {
    await studio.signIn(`/editor/${projectId}`);
    await tabB.goto(`${studio.service.url}/editor/${projectId}`);
    for (const tab of [tabA, tabB]) {
      await clip(tab, 'Video track', '1: Red, 2 s').waitFor();
      await clip(tab, 'Video track', '2: Green, 4 s').waitFor();
    }
    await tabB.evaluate(`window.liveTestMark = ${JSON.stringify(MARK)}`);
    assert.equal(reloadsOfB, 0, 'tab B loaded once');
  });

  it('shows a trim, a move, a delete, a text clip and an undo made in tab A in tab B', async () => {
    await clip(tabA, 'Video track', '2: Green, 4 s').focus();
    await tabA.keyboard.press('Shift+ArrowLeft');
    await shows('the trim in tab B', clip(tabB, 'Video track', '2: Green, 3.5 s'));

    await clip(tabA, 'Video track', '2: Green, 3.5 s').focus();
    await tabA.keyboard.press('Alt+ArrowLeft');
    await shows('the move in tab B', clip(tabB, 'Video track', '1: Green, 3.5 s'));
    await shows('Red second in tab B', clip(tabB, 'Video track', '2: Red, 2 s'));

    await clip(tabA, 'Video track', '2: Red, 2 s').focus();
    await tabA.keyboard.press('Delete');
    await eventually('the delete in tab B', async () => (await clipCount(tabB, 'Video track')) === 1);
    await clip(tabB, 'Video track', '1: Green, 3.5 s').waitFor();

    const form = tabA.getByRole('form', { name: 'New text clip', exact: true });
    await form.getByLabel('Text', { exact: true }).fill('From tab A');
    await form.getByRole('button', { name: 'Add text', exact: true }).click();
    await shows('the text clip in tab B', clip(tabB, 'Text track', '1: From tab A, 3 s'));

    // Undo in tab A takes back the delete (the text clip was added by the form, outside the history).
    await timeline(tabA).getByRole('button', { name: 'Undo', exact: true }).click();
    await shows('Red back in tab B', clip(tabB, 'Video track', '2: Red, 2 s'));
    assert.equal(await clipCount(tabB, 'Video track'), 2);
  });

  it('shows an edit made through the REST API with the key in both tabs', async () => {
    const added = await editor.addClip(projectId, { track: 'video', asset_id: blue.id, duration_sec: 1 });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    for (const tab of [tabA, tabB])
      await shows(`Blue in ${tab === tabA ? 'tab A' : 'tab B'}`, clip(tab, 'Video track', '3: Blue, 1 s'));

    const green = (await videoClips())[0];
    assert.ok(green);
    const patched = await editor.patchClip(projectId, green.id, { duration_sec: 5 });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    for (const tab of [tabA, tabB])
      await shows(
        `Green 5 s in ${tab === tabA ? 'tab A' : 'tab B'}`,
        clip(tab, 'Video track', '1: Green, 5 s'),
      );

    const deleted = await editor.deleteClip(projectId, added.body.clip.id);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    for (const tab of [tabA, tabB])
      await eventually('Blue gone', async () => (await clipCount(tab, 'Video track')) === 2);
  });

  it("shows the clips of a builtin director's turn sent from tab A's chat in tab B", async () => {
    const chat = tabA.getByRole('region', { name: 'Chat with the director', exact: true });
    await chat.getByLabel('Instruction', { exact: true }).fill('add a title Harbour lights for 2 seconds');
    await chat.getByRole('button', { name: 'Send', exact: true }).click();
    await shows('the title in tab B', clip(tabB, 'Text track', /Harbour lights, 2 s$/), TURN_MS);
    await eventually(
      'the turn ends in tab A',
      () => chat.getByRole('button', { name: 'Send', exact: true }).isEnabled(),
      TURN_MS,
    );

    await chat.getByLabel('Instruction', { exact: true }).fill('move clip 2 to the start');
    await chat.getByRole('button', { name: 'Send', exact: true }).click();
    await shows('the move in tab B', clip(tabB, 'Video track', '1: Red, 2 s'), TURN_MS);
    await clip(tabB, 'Video track', '2: Green, 5 s').waitFor();
    assert.equal(await clipCount(tabB, 'Text track'), 2, 'the form and the director each added one');
  });

  it('never reloaded tab B, and neither tab reported an error', async () => {
    assert.equal(await tabB.evaluate('window.liveTestMark'), MARK, 'the mark left in tab B is still there');
    assert.equal(reloadsOfB, 0, 'tab B loaded once');
    assert.deepEqual(studio.problems, []);
  });
});
