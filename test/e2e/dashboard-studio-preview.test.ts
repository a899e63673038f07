// The editor's preview player in Chromium (docs/dashboard.md "The timeline"), found by role and label
// only: a video of a red image, a blue image and a test-pattern video, with a text clip over the blue one.
// Play advances the Playhead without ever asking for an export; the canvas shows red just before the cut and
// blue just after; the text clip's words are on the canvas (read by tesseract) at its time and not outside it;
// the video clip's frames are drawn (its own clock printed on them) and change as the playhead moves, and its
// box on the timeline shows the part of its filmstrip it plays; a transition set by REST shows at once as a
// cross-dissolve; the video clip's sound is started on WebAudio from the playhead's place in it and stopped on
// Pause. In a second project: a square picture fitted with black
// bars, cropped to fill the frame once the export panel's Fit says `fill`; and a quiet tone (−40 LUFS) heard
// near the export's −14 LUFS, measured on what the page sends to its speakers.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { integratedLoudness } from '../../web/src/studio/loudness.ts';
import { startEditorBrowser, type EditorBrowser } from '../helpers/editor-browser.ts';
import { makeMedia } from '../helpers/editor.ts';
import { runAxe, seriousViolations, skipWithoutChromium } from '../helpers/chromium.ts';
import { sleep } from '../helpers/wait.ts';

/** Liveness bounds, not budgets: the machine's cores are shared. */
const STEP_MS = 20_000;
/** The text clip's words, over the blue clip from 2.5 s to 3.5 s. */
const WORDS = 'HARBOUR LIGHTS';

const work = mkdtempSync(join(tmpdir(), 'mf-studio-preview-'));

/** A 4-second 320×180 H.264 test pattern (testsrc2, which moves every frame) with a tone. */
function testPattern(): Buffer {
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH });
  const file = join(work, 'pattern.mp4');
  execFileSync(ffmpeg, [
    ...['-hide_banner', '-nostdin', '-v', 'error', '-y'],
    ...['-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=30', '-f', 'lavfi', '-i', 'sine=frequency=440'],
    ...['-t', '4', '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac'],
    file,
  ]);
  return readFileSync(file);
}

/** A 5-second 1 kHz tone, mono, its peaks at −40 dBFS (sine's 1/8 lowered by 22 dB): about −40 LUFS. */
function quietTone(): Buffer {
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH });
  return execFileSync(ffmpeg, [
    ...['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=1000:sample_rate=48000:duration=5'],
    ...['-af', 'volume=-22dB', '-f', 'wav', 'pipe:1'],
  ]);
}

/**
 * Records what the page's AudioContexts send to their speakers: each node connected to a destination is
 * also connected to a script processor that keeps its two channels (and passes nothing on).
 */
const RECORD_OUTPUT = `
  window.__output = { rate: 0, left: [], right: [] };
  const connect = AudioNode.prototype.connect;
  AudioNode.prototype.connect = function (target) {
    const result = connect.apply(this, arguments);
    if (target instanceof AudioDestinationNode && this.context instanceof AudioContext && !this.__recorded) {
      this.__recorded = true;
      const recorder = this.context.createScriptProcessor(4096, 2, 2);
      recorder.__recorded = true;
      recorder.onaudioprocess = (event) => {
        window.__output.left.push(new Float32Array(event.inputBuffer.getChannelData(0)));
        window.__output.right.push(new Float32Array(event.inputBuffer.getChannelData(1)));
      };
      window.__output.rate = this.context.sampleRate;
      connect.call(this, recorder);
      connect.call(recorder, this.context.destination);
    }
    return result;
  };
`;

/** What the canvas shows: its centre pixel, one near the top, how many distinct colours a coarse grid of it has, and a PNG. */
interface CanvasSample {
  centre: [number, number, number];
  /** A pixel in the middle of the top eighth (above a centred title). */
  top: [number, number, number];
  colours: number;
  png: string;
}

/**
 * Records each AudioBufferSourceNode's start (offset, duration, rate, its sound's length) and stop, on the
 * AudioContext that plays (not the offline ones that measure the loudness).
 */
const RECORD_SOUNDS = `
  window.__sounds = { starts: [], stops: 0, elements: [] };
  const play = HTMLMediaElement.prototype.play;
  HTMLMediaElement.prototype.play = function () {
    if (this instanceof HTMLAudioElement)
      window.__sounds.elements.push({ rate: this.playbackRate, preservesPitch: this.preservesPitch, at: this.currentTime });
    return play.apply(this, arguments);
  };
  const start = AudioBufferSourceNode.prototype.start;
  AudioBufferSourceNode.prototype.start = function (when, offset, duration) {
    // The loudness measurement's offline renders play nothing.
    if (!(this.context instanceof OfflineAudioContext))
      window.__sounds.starts.push({ offset, duration, rate: this.playbackRate.value, length: this.buffer && this.buffer.duration });
    return start.apply(this, arguments);
  };
  const stop = AudioBufferSourceNode.prototype.stop;
  AudioBufferSourceNode.prototype.stop = function () {
    if (!(this.context instanceof OfflineAudioContext)) window.__sounds.stops += 1;
    return stop.apply(this, arguments);
  };
`;

/** A sound element the page played (RECORD_SOUNDS): a sped-up clip's sound, its pitch kept. */
interface PlayedElement {
  rate: number;
  preservesPitch: boolean;
  at: number;
}

/** One sound the page started (RECORD_SOUNDS). */
interface StartedSound {
  offset: number;
  duration: number;
  rate: number;
  length: number | null;
}

/** What the test reads of the page's canvas (the test's own types have no DOM). */
interface BrowserCanvas {
  width: number;
  height: number;
  toDataURL(type: string): string;
  getContext(kind: '2d'): {
    getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
  };
}

describe('the editor preview player, in Chromium', { skip: skipWithoutChromium() }, () => {
  let studio: EditorBrowser;
  let page: Page;
  let projectId = '';
  let editor: EditorBrowser['editor'];
  /** The blue clip (the video track's second), which the last test gives a transition. */
  let blueClipId = '';
  const exportRequests: string[] = [];

  before(async () => {
    const mp4 = testPattern();
    studio = await startEditorBrowser({
      db: 'dashboard_studio_preview',
    });
    ({ page, editor } = studio);
    const project = await editor.createProject({ name: 'Harbour preview', aspect_ratio: '16:9' });
    projectId = project.id;
    const upload = (data: Buffer, type: string, name: string) => studio.upload(projectId, data, type, name);
    const red = await upload(makeMedia('png', { colour: 'red' }), 'image/png', 'Red');
    const blue = await upload(makeMedia('png', { colour: 'blue' }), 'image/png', 'Blue');
    const pattern = await upload(mp4, 'video/mp4', 'Pattern');
    for (const body of [
      { track: 'video', asset_id: red.id, duration_sec: 2 },
      { track: 'video', asset_id: blue.id, duration_sec: 2 },
      { track: 'video', asset_id: pattern.id, duration_sec: 2 },
      {
        track: 'text',
        text: WORDS,
        style: 'title',
        start_sec: 2.5,
        duration_sec: 1,
        fade_in_sec: 0,
        fade_out_sec: 0,
      },
    ]) {
      const answer = await editor.addClip(projectId, body);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      if (body.asset_id === blue.id) blueClipId = answer.body.clip.id;
    }

    // Every sound the page starts and stops on WebAudio, recorded (the test cannot listen).
    await studio.chromium.context.addInitScript(RECORD_SOUNDS);
    page.setDefaultTimeout(STEP_MS);
    page.on('request', (request) => {
      if (/\/export(\b|\/|\?|$)/.test(new URL(request.url()).pathname)) exportRequests.push(request.url());
    });
  });

  after(async () => {
    await studio?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  /** What RECORD_SOUNDS has seen the page play so far. */
  const sounds = () =>
    page.evaluate(
      () =>
        (
          globalThis as unknown as {
            __sounds: { starts: StartedSound[]; stops: number; elements: PlayedElement[] };
          }
        ).__sounds,
    );
  const preview = () => page.getByRole('region', { name: 'Preview', exact: true });
  const playhead = () => preview().getByRole('slider', { name: 'Playhead', exact: true });
  const button = (name: string) => preview().getByRole('button', { name, exact: true });

  /** Moves the Playhead as a user's drag does (its value, then an input event). */
  async function seek(slider: Locator, sec: number): Promise<void> {
    await slider.evaluate((element, value) => {
      const input = element as unknown as { value: string; dispatchEvent(event: Event): boolean };
      input.value = String(value);
      input.dispatchEvent(new Event('input', { bubbles: true }));
    }, sec);
  }

  async function sample(): Promise<CanvasSample> {
    return preview()
      .locator('canvas')
      .evaluate((element) => {
        const canvas = element as unknown as BrowserCanvas;
        const context = canvas.getContext('2d');
        const { width, height } = canvas;
        const pixel = context.getImageData(Math.floor(width / 2), Math.floor(height / 2), 1, 1).data;
        const high = context.getImageData(Math.floor(width / 2), Math.floor(height / 16), 1, 1).data;
        const seen = new Set<string>();
        for (let y = 0; y < 8; y++)
          for (let x = 0; x < 8; x++) {
            const [r, g, b] = context.getImageData(
              Math.floor(((x + 0.5) * width) / 8),
              Math.floor(((y + 0.5) * height) / 8),
              1,
              1,
            ).data;
            seen.add(`${r! >> 5},${g! >> 5},${b! >> 5}`);
          }
        return {
          centre: [pixel[0]!, pixel[1]!, pixel[2]!],
          top: [high[0]!, high[1]!, high[2]!],
          colours: seen.size,
          png: canvas.toDataURL('image/png'),
        };
      }) as Promise<CanvasSample>;
  }

  /** Polls the canvas until `check` holds (pictures load and seeks land asynchronously). */
  async function canvasUntil(what: string, check: (s: CanvasSample) => boolean): Promise<CanvasSample> {
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      const shown = await sample();
      if (check(shown)) return shown;
      if (Date.now() > deadline)
        assert.fail(`${what}: the canvas's centre is rgb(${shown.centre.join(', ')})`);
      await sleep(100);
    }
  }

  const isRed = ([r, g, b]: number[]) => r! > 180 && g! < 60 && b! < 60;
  const isBlue = ([r, g, b]: number[]) => b! > 180 && r! < 60 && g! < 60;

  let ocrCount = 0;
  /** The words tesseract reads on the canvas. */
  async function wordsOnCanvas(): Promise<string> {
    const { png } = await sample();
    const file = join(work, `canvas-${++ocrCount}.png`);
    writeFileSync(file, Buffer.from(png.replace(/^data:image\/png;base64,/, ''), 'base64'));
    const text = execFileSync('tesseract', [file, 'stdout', '--psm', '6'], { encoding: 'utf8' });
    return text.replace(/\s+/g, ' ').trim();
  }

  it('signs in and shows the Preview with its canvas, Play and a Playhead over the whole video', async () => {
    await studio.signIn(`/editor/${projectId}`);
    await preview().waitFor();
    assert.equal(await preview().locator('canvas').count(), 1);
    await button('Play').waitFor();
    assert.equal(await playhead().getAttribute('min'), '0');
    assert.equal(Number(await playhead().getAttribute('max')), 6, 'three 2 s clips');
    assert.equal(Number(await playhead().inputValue()), 0);
    await canvasUntil('the first clip (red) at 0 s', (s) => isRed(s.centre));
    const violations = seriousViolations(await runAxe(page));
    assert.deepEqual(violations, [], JSON.stringify(violations, null, 2));
  });

  it('plays: the Playhead advances, the button says Pause, and nothing asks for an export', async () => {
    await button('Play').click();
    await button('Pause').waitFor();
    const deadline = Date.now() + STEP_MS;
    while (Number(await playhead().inputValue()) < 0.5) {
      if (Date.now() > deadline) assert.fail('the Playhead did not advance');
      await sleep(50);
    }
    await button('Pause').click();
    await button('Play').waitFor();
    const stoppedAt = Number(await playhead().inputValue());
    await sleep(300);
    assert.equal(Number(await playhead().inputValue()), stoppedAt, 'paused: the Playhead stays');
    // Space on the player plays and pauses too.
    await playhead().focus();
    await page.keyboard.press('Space');
    await button('Pause').waitFor();
    await page.keyboard.press('Space');
    await button('Play').waitFor();
    // The arrow keys step one frame on the player.
    await seek(playhead(), 1);
    await preview().focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowLeft');
    assert.ok(
      Math.abs(Number(await playhead().inputValue()) - 31 / 30) < 1e-6,
      await playhead().inputValue(),
    );
    assert.deepEqual(exportRequests, [], 'playing never requests an export');
  });

  it('shows red just before the cut at 2 s and blue just after it', async () => {
    await seek(playhead(), 1.95);
    await canvasUntil('red at 1.95 s', (s) => isRed(s.centre));
    await seek(playhead(), 2.04);
    await canvasUntil('blue at 2.04 s', (s) => isBlue(s.centre));
    await seek(playhead(), 1.95);
    await canvasUntil('red again at 1.95 s', (s) => isRed(s.centre));
  });

  it('draws the text clip at its time and not outside it', async () => {
    await seek(playhead(), 3);
    await canvasUntil('blue under the text at 3 s', (s) => isBlue(s.top));
    const during = await wordsOnCanvas();
    assert.match(during, /HARBOUR/, `the words at 3 s: "${during}"`);
    await seek(playhead(), 2.2);
    await canvasUntil('blue at 2.2 s', (s) => isBlue(s.centre));
    const before = await wordsOnCanvas();
    assert.doesNotMatch(before, /HARBOUR/, `no words at 2.2 s: "${before}"`);
    await seek(playhead(), 3.7);
    await canvasUntil('blue at 3.7 s', (s) => isBlue(s.centre));
    const after = await wordsOnCanvas();
    assert.doesNotMatch(after, /HARBOUR/, `no words at 3.7 s: "${after}"`);
  });

  it("shows the video clip's frames, moving with the playhead", async () => {
    const isPattern = (s: CanvasSample) => s.colours >= 6 && !isRed(s.centre) && !isBlue(s.centre);
    await seek(playhead(), 4.5);
    const first = await canvasUntil('the test pattern at 4.5 s', isPattern);
    // testsrc2 prints its own time: 0.5 s into the clip is its source's 0.5 s (frame 15).
    const stamp = await wordsOnCanvas();
    assert.match(stamp, /\.500/, `the pattern's clock at 4.5 s: "${stamp}"`);
    await seek(playhead(), 5.5);
    const later = await canvasUntil(
      'another frame of the pattern at 5.5 s',
      (s) => isPattern(s) && s.png !== first.png,
    );
    assert.notEqual(later.png, first.png);
    assert.deepEqual(exportRequests, [], 'seeking never requests an export');
    assert.deepEqual(studio.problems, [], 'no CSP violation or uncaught error');
  });

  it("draws on the pattern clip's box the half of its filmstrip it plays (its first 2 s of 4)", async () => {
    const box = page
      .getByRole('region', { name: 'Timeline', exact: true })
      .getByRole('button', { name: /^3: Pattern/ });
    // The filmstrip is made after the upload: the box shows it once the asset has it.
    const strip = box.locator('.tl-filmstrip');
    await strip.waitFor({ timeout: 3 * STEP_MS });
    const look = await strip.evaluate((element) => {
      // (The test's own types have no DOM.)
      const style = (
        globalThis as unknown as {
          getComputedStyle(of: unknown): { backgroundSize: string; backgroundPosition: string };
        }
      ).getComputedStyle(element);
      return { size: style.backgroundSize, position: style.backgroundPosition };
    });
    assert.deepEqual(look, { size: '200% 100%', position: '0% 0%' });
    assert.deepEqual(studio.problems, [], 'no CSP violation or uncaught error');
  });

  it('follows a transition set by REST at once: a cross-dissolve half red, half blue in its middle', async () => {
    const answer = await editor.patchClip(projectId, blueClipId, {
      transition_in: { type: 'fade', duration_sec: 1 },
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    // The page re-reads the project on the clip's event: the video is one second shorter.
    const deadline = Date.now() + STEP_MS;
    while (Number(await playhead().getAttribute('max')) !== 5) {
      if (Date.now() > deadline) assert.fail('the Playhead did not become 5 s long');
      await sleep(100);
    }
    await seek(playhead(), 1.5);
    const mixed = ([r, g, b]: number[]) => Math.abs(r! - 128) < 40 && g! < 40 && Math.abs(b! - 128) < 40;
    await canvasUntil('half red, half blue at 1.5 s', (s) => mixed(s.centre));
    await seek(playhead(), 2.2);
    await canvasUntil('blue alone after the transition', (s) => isBlue(s.centre));
    assert.deepEqual(exportRequests, [], 'still no export');
  });

  it("plays the video clip's own sound from the playhead, decoded in the page, and stops it on Pause", async () => {
    const before = await sounds();
    // The pattern is the third clip (from 3 s now that the blue clip comes in over the red one).
    await seek(playhead(), 3.5);
    await button('Play').click();
    await button('Pause').waitFor();
    const deadline = Date.now() + STEP_MS;
    let started = await sounds();
    while (started.starts.length === before.starts.length) {
      if (Date.now() > deadline) assert.fail('no sound was started');
      await sleep(50);
      started = await sounds();
    }
    await button('Pause').click();
    await button('Play').waitFor();
    const sound = started.starts[before.starts.length]!;
    assert.ok(Math.abs(sound.offset - 0.5) < 0.2, `from the pattern's 0.5 s: ${JSON.stringify(sound)}`);
    assert.ok(Math.abs(sound.duration - 1.5) < 0.2, `to the clip's end: ${JSON.stringify(sound)}`);
    assert.equal(sound.rate, 1);
    assert.ok(sound.length !== null && Math.abs(sound.length - 4) < 0.1, 'the whole 4 s sound decoded');
    const stopDeadline = Date.now() + STEP_MS;
    while ((await sounds()).stops <= before.stops) {
      if (Date.now() > stopDeadline) assert.fail('Pause did not stop the sound');
      await sleep(20);
    }
    assert.deepEqual(exportRequests, [], 'still no export');
  });

  it('plays a sped-up video clip twice as fast, its picture and its sound (pitch kept)', async () => {
    const pattern = (await editor.state(projectId)).body.clips.find(
      (c) => c.track === 'video' && c.idx === 2,
    )!;
    const answer = await editor.patchClip(projectId, pattern.id, { speed: 2 });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    // 0.5 s into the clip at speed 2 is its source's 1 s (testsrc2 prints it).
    const deadline = Date.now() + STEP_MS;
    let stamp = '';
    while (!/01\.000/.test(stamp)) {
      if (Date.now() > deadline) assert.fail(`the pattern's clock at 3.5 s: "${stamp}"`);
      await seek(playhead(), 3.5);
      await sleep(200);
      // OCR may put a space inside the clock ("00:00:01 .000").
      stamp = (await wordsOnCanvas()).replace(/\s+/g, '');
    }
    const before = (await sounds()).elements.length;
    await button('Play').click();
    await button('Pause').waitFor();
    let played = await sounds();
    while (played.elements.length === before) {
      if (Date.now() > deadline) assert.fail('the sped-up sound was not played');
      await sleep(50);
      played = await sounds();
    }
    await button('Pause').click();
    await button('Play').waitFor();
    const element = played.elements[before]!;
    assert.equal(element.rate, 2);
    assert.equal(element.preservesPitch, true);
    assert.ok(Math.abs(element.at - 1) < 0.2, `from the source's 1 s: ${JSON.stringify(element)}`);
    assert.deepEqual(exportRequests, [], 'still no export');
  });
  describe('a second project: a square picture and a quiet tone', () => {
    let quietId = '';
    before(async () => {
      const project = await editor.createProject({ name: 'Quiet preview', aspect_ratio: '16:9' });
      quietId = project.id;
      const square = await studio.upload(quietId, makeMedia('png', { colour: 'red' }), 'image/png', 'Square');
      const tone = await studio.upload(quietId, quietTone(), 'audio/wav', 'Quiet tone');
      for (const body of [
        { track: 'video', asset_id: square.id, duration_sec: 5 },
        { track: 'music', asset_id: tone.id, start_sec: 0 },
      ]) {
        const answer = await editor.addClip(quietId, body);
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
      }
      await studio.chromium.context.addInitScript(RECORD_OUTPUT);
      await page.goto(`${studio.service.url}/editor/${quietId}`);
      await preview().waitFor();
    });

    /** The canvas's pixel at the middle of its left sixteenth (a bar beside a fitted square picture). */
    const leftEdge = () =>
      preview()
        .locator('canvas')
        .evaluate((element) => {
          const canvas = element as unknown as BrowserCanvas;
          const { width, height } = canvas;
          const pixel = canvas.getContext('2d').getImageData(Math.floor(width / 16), height / 2, 1, 1).data;
          return [pixel[0]!, pixel[1]!, pixel[2]!];
        });

    it("fits the square picture with black bars, and crops it to the frame when Fit says 'fill'", async () => {
      await canvasUntil('the square in the middle', (s) => isRed(s.centre));
      const isBlack = ([r, g, b]: number[]) => r! < 30 && g! < 30 && b! < 30;
      assert.ok(isBlack(await leftEdge()), `a black bar at the left: ${(await leftEdge()).join(', ')}`);
      const fit = page.getByRole('combobox', { name: 'Fit', exact: true });
      await fit.selectOption('fill');
      const deadline = Date.now() + STEP_MS;
      while (!isRed(await leftEdge())) {
        if (Date.now() > deadline) assert.fail(`fill: the left edge is ${(await leftEdge()).join(', ')}`);
        await sleep(100);
      }
      await fit.selectOption('fit');
      while (!isBlack(await leftEdge())) {
        if (Date.now() > deadline)
          assert.fail(`fit again: the left edge is ${(await leftEdge()).join(', ')}`);
        await sleep(100);
      }
      assert.deepEqual(studio.problems, [], 'no CSP violation or uncaught error');
    });

    it("plays the −40 LUFS tone near the export's −14 LUFS (±2 LU)", async (t) => {
      /** The loudness of what the page sent to its speakers over one play of the whole video. */
      const playedLoudness = async (): Promise<number> => {
        await seek(playhead(), 0);
        await page.evaluate(() => {
          const output = (globalThis as unknown as { __output: { left: unknown[]; right: unknown[] } })
            .__output;
          output.left = [];
          output.right = [];
        });
        await button('Play').click();
        await button('Pause').waitFor();
        // It stops by itself at the video's end (5 s).
        await button('Play').waitFor({ timeout: STEP_MS });
        const recorded = await page.evaluate(() => {
          const output = (
            globalThis as unknown as {
              __output: { rate: number; left: Float32Array[]; right: Float32Array[] };
            }
          ).__output;
          return {
            rate: output.rate,
            left: output.left.flatMap((piece) => Array.from(piece)),
            right: output.right.flatMap((piece) => Array.from(piece)),
          };
        });
        assert.ok(recorded.left.length > recorded.rate * 3, `recorded ${recorded.left.length} samples`);
        return integratedLoudness(
          [Float32Array.from(recorded.left), Float32Array.from(recorded.right)],
          recorded.rate,
        );
      };
      // The page measures the mix once its sounds are decoded: until then it plays as mixed (−40 LUFS).
      const deadline = Date.now() + 3 * STEP_MS;
      let lufs = await playedLoudness();
      while (Math.abs(lufs - -14) > 2) {
        if (Date.now() > deadline) assert.fail(`the tone played at ${lufs.toFixed(1)} LUFS`);
        await sleep(500);
        lufs = await playedLoudness();
      }
      t.diagnostic(`the tone played at ${lufs.toFixed(2)} LUFS`);
    });
  });
});
