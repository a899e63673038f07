// The builders of the timeline's effects without ffmpeg (docs/editor.md, Export): transitions as overlaps,
// motion, speed, text layout and its filters, previews, the fast path's blockers and the filters each effect
// needs. What the frames look like is test/integration/export-effects.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { exportCommand, exportFiles } from '../../workers/export/command.ts';
import { fastPathBlockers } from '../../workers/export/fast-path.ts';
import {
  parseFilterList,
  planFeatures,
  REQUIRED_FILTERS,
  unsupportedFeatures,
} from '../../workers/export/filter-support.ts';
import { inputArgs } from '../../workers/export/input-args.ts';
import { halvesCommands, rendersInHalves } from '../../workers/export/parallel-render.ts';
import { motionFilters, motionSize } from '../../workers/export/motion.ts';
import { outputSize } from '../../workers/export/output-size.ts';
import { clipFrames, pictureDurationSec, pictureGraph } from '../../workers/export/picture-graph.ts';
import { pictureTimeline } from '../../workers/export/plan.ts';
import { filterValue, textFiles, textFilters, textLinePath } from '../../workers/export/text-graph.ts';
import {
  bundledFont,
  layoutText,
  TEXT_MAX_WIDTH_SHARE,
  type FontMeasure,
} from '../../workers/export/text-layout.ts';
import { overlapFrames } from '../../workers/export/transitions.ts';
import type { ExportPlan, ExportSource, PictureClip, TextOverlay } from '../../workers/export/work-order.ts';
import { inputsOf, optionOf } from '../helpers/ffmpeg-run.ts';

const video: ExportSource = {
  path: '/staged/clip.mp4',
  demuxer: 'mov',
  kind: 'video',
  durationSec: 20,
  video: { codec: 'h264', width: 720, height: 1280, fps: 30, pixFmt: 'yuv420p' },
  audio: { codec: 'aac', sampleRate: 48_000, channels: 2 },
};
const image: ExportSource = {
  path: '/staged/still.png',
  demuxer: 'png_pipe',
  kind: 'image',
  durationSec: null,
};

const clip = (source: ExportSource, durationSec: number, extra: Partial<PictureClip> = {}): PictureClip => ({
  source,
  trimStartSec: 0,
  durationSec,
  volume: 1,
  ...extra,
});

function plan(picture: PictureClip[], extra: Partial<ExportPlan> = {}): ExportPlan {
  return {
    picture,
    sounds: [],
    output: { width: 720, height: 1280, fps: 30, fit: 'fit', path: '/work/ex_1/output.mp4' },
    filters: { loudnorm: true, sidechaincompress: true },
    ...extra,
  };
}

const title = (text: string, extra: Partial<TextOverlay> = {}): TextOverlay => ({
  text,
  style: 'title',
  position: 'center',
  color: '#FFFFFF',
  background: 'none',
  startSec: 1,
  durationSec: 3,
  fadeInSec: 0.3,
  fadeOutSec: 0.3,
  ...extra,
});

/** A font whose every character is 0.5 em wide (lines can be checked by counting characters). */
const monospace: FontMeasure = {
  unitsPerEm: 1000,
  ascender: 800,
  descender: -200,
  advance: (text, sizePx) => Array.from(text).length * 0.5 * sizePx,
};

describe('transitions', () => {
  it('overlaps each clip with the one before by its transition: Σ durations − Σ transitions, to the frame', () => {
    const p = plan([
      clip(video, 3, { transitionIn: { type: 'fade', durationSec: 0.5 } }),
      clip(video, 3, { transitionIn: { type: 'fade', durationSec: 1 } }),
      clip(video, 2.01),
      clip(image, 3, { transitionIn: { type: 'wipeleft', durationSec: 0.25 } }),
    ]);
    // The first clip's transition is a fade from black: it does not shorten the video.
    assert.deepEqual(pictureTimeline(p).starts, [0, 2, 5, 6.76]);
    // The last transition: the previous clip ends at frame round(7.01 × 30) = 210, this one starts at
    // round(6.76 × 30) = 203, so it overlaps 7 frames.
    assert.deepEqual(overlapFrames(p), [0, 30, 0, 7]);
    assert.deepEqual(clipFrames(p), [90, 90, 60, 90]);
    assert.equal(pictureDurationSec(p), (90 + 90 + 60 + 90 - 30 - 7) / 30);
    assert.equal(pictureDurationSec(p), Math.round(9.76 * 30) / 30);

    const graph = pictureGraph(p).split(';');
    // The first clip fades in from black over 15 frames; cuts are concatenated, then each transition's xfade
    // starts where the joined stream's frames end less the overlap.
    assert.match(graph[0]!, /setpts=PTS-STARTPTS,fade=t=in:s=0:n=15:color=black\[vclip0\]$/);
    assert.ok(graph.includes('[vclip1][vclip2]concat=n=2:v=1:a=0,fps=30[vrun1]'), graph.join('\n'));
    // An xfade that another takes ends one frame past its last (210 = 60 + 90 + 60 frames), cut there again.
    assert.ok(
      graph.includes(
        '[vclip0][vrun1]xfade=transition=fade:duration=1:offset=2,tpad=stop_mode=clone:stop=1,trim=end_frame=210[vjoin1]',
      ),
      graph.join('\n'),
    );
    assert.equal(
      graph.at(-1),
      '[vjoin1][vclip3]xfade=transition=wipeleft:duration=0.233333:offset=6.766667[vout]',
    );
  });

  it('gives every transition type to xfade by name, and a single clip passes through', () => {
    for (const type of [
      'fadeblack',
      'fadewhite',
      'wiperight',
      'slideleft',
      'slideright',
      'circleopen',
    ] as const) {
      const p = plan([clip(video, 2), clip(video, 2, { transitionIn: { type, durationSec: 1 } })]);
      assert.match(pictureGraph(p), new RegExp(`xfade=transition=${type}:duration=1:offset=1\\[vout\\]$`));
      assert.equal(pictureDurationSec(p), 3);
    }
    assert.match(pictureGraph(plan([clip(video, 2)])), /\[vclip0\]null\[vout\]$/);
  });
});

describe('motion', () => {
  it('moves a still with sub-pixel perspective corners over its frames; none and videos do not move', () => {
    assert.deepEqual(motionFilters('none', 150, { width: 720, height: 1280 }), []);
    assert.deepEqual(motionFilters(undefined, 150, { width: 720, height: 1280 }), []);
    const zoom = motionFilters('zoom_in', 150, { width: 720, height: 1280 });
    assert.match(zoom[0]!, /^perspective=x0='W\*\(1-1\/\(1\+0\.15\*in\/149\)\)\/2':/);
    assert.match(zoom[0]!, /:interpolation=cubic:sense=source:eval=frame$/);
    // Final works at 1.15 × the output and scales each frame back; a preview at its own size, linear.
    assert.deepEqual(motionSize({ width: 720, height: 1280 }), { width: 828, height: 1472 });
    assert.equal(zoom[1], 'scale=720:1280:flags=bicubic');
    const preview = motionFilters('pan_left', 90, { width: 360, height: 640 }, 'preview');
    assert.equal(preview.length, 1);
    assert.match(preview[0]!, /interpolation=linear/);
    assert.deepEqual(motionSize({ width: 360, height: 640 }, 'preview'), { width: 360, height: 640 });

    const still = pictureGraph(plan([clip(image, 5, { motion: 'zoom_out' })]));
    assert.ok(still.includes("scale=w='if(gte(dar,828/1472)"), 'placed at the internal size');
    assert.match(
      still,
      /trim=end_frame=150,setpts=PTS-STARTPTS,perspective=x0='W\*\(1-1\/\(1\.15-0\.15\*in\/149\)\)\/2'/,
    );
    const moving = pictureGraph(plan([clip(video, 5, { motion: 'zoom_in' })]));
    assert.doesNotMatch(moving, /perspective/, 'motion is for stills');
  });

  it('pans 10 % of the shown width, left moving the window right', () => {
    const [left] = motionFilters('pan_left', 11, { width: 720, height: 1280 }, 'preview');
    const [right] = motionFilters('pan_right', 11, { width: 720, height: 1280 }, 'preview');
    assert.ok(left!.includes("x0='((W-W/1.15)/2+(in/10-0.5)*0.1*W/1.15)'"), left);
    assert.ok(right!.includes("x0='((W-W/1.15)/2+(0.5-in/10)*0.1*W/1.15)'"), right);
  });
});

describe('speed', () => {
  it('reads duration × speed seconds of the source and plays them in the clip’s duration', () => {
    const p = plan([clip(video, 2, { speed: 2, trimStartSec: 3 }), clip(video, 2, { speed: 0.5 })]);
    const [fast, slow] = inputsOf(inputArgs(p));
    assert.deepEqual([optionOf(fast!, '-ss'), optionOf(fast!, '-t')], ['3', '4']);
    assert.deepEqual([optionOf(slow!, '-ss'), optionOf(slow!, '-t')], [undefined, '1']);
    const graph = pictureGraph(p);
    assert.match(graph, /^\[0:v\]setpts=\(PTS-STARTPTS\)\/2,/);
    assert.match(graph, /;\[1:v\]setpts=\(PTS-STARTPTS\)\/0\.5,/);
    assert.deepEqual(clipFrames(p), [60, 60], 'the timeline counts the clip’s own duration');
    // An image has no time to speed up.
    assert.match(pictureGraph(plan([clip(image, 2, { speed: 2 })])), /setpts=PTS-STARTPTS,/);
  });
});

describe('previews', () => {
  it('are 360 px on the short side, with the fastest settings and a cheap scaler', () => {
    assert.deepEqual(outputSize('9:16', 'preview'), { width: 360, height: 640 });
    assert.deepEqual(outputSize('16:9', 'preview'), { width: 640, height: 360 });
    assert.deepEqual(outputSize('4:5', 'preview'), { width: 360, height: 450 });
    assert.deepEqual(outputSize('4:3', 'preview'), { width: 480, height: 360 });
    const p = plan([clip(video, 2)], {
      output: { width: 360, height: 640, fps: 30, fit: 'fit', path: '/o.mp4', quality: 'preview' },
    });
    const args = exportCommand(p, 'anullsrc[aout]');
    assert.equal(optionOf(args, '-preset'), 'ultrafast');
    assert.equal(optionOf(args, '-crf'), '28');
    assert.equal(optionOf(inputsOf(args)[0]!, '-skip_loop_filter:v'), 'all');
    assert.match(pictureGraph(p), /:flags=fast_bilinear,pad=360:640/);
    const final = exportCommand(plan([clip(video, 2)]), 'anullsrc[aout]');
    assert.equal(optionOf(final, '-preset'), 'veryfast');
    assert.equal(optionOf(inputsOf(final)[0]!, '-skip_loop_filter:v'), undefined);
  });

  it('render the picture and the sound side by side, then mux them by copy; a final renders in one command', () => {
    const p = plan([clip(video, 2), clip(image, 3)], {
      output: { width: 360, height: 640, fps: 30, fit: 'fit', path: '/w/o.mp4', quality: 'preview' },
    });
    assert.equal(rendersInHalves(p), true);
    assert.equal(rendersInHalves(plan([clip(video, 2)])), false);
    const files = { picturePath: '/w/o.mp4.picture.mp4', soundPath: '/w/o.mp4.sound.mp4' };
    const { halves, mux } = halvesCommands(p, files);
    const [picture, sound] = halves;
    const whole = exportCommand(p);
    // Both halves open the plan's inputs as the one command does, so the graphs' input numbering holds.
    assert.equal(inputsOf(picture).length, inputsOf(whole).length);
    assert.equal(inputsOf(sound).length, inputsOf(whole).length);
    assert.equal(optionOf(picture, '-filter_complex'), pictureGraph(p));
    assert.deepEqual(
      [optionOf(picture, '-map'), picture.includes('-an'), picture.at(-1)],
      ['[vout]', true, `file:${files.picturePath}`],
    );
    assert.equal(optionOf(picture, '-preset'), 'ultrafast');
    assert.equal(picture[picture.lastIndexOf('-t') + 1], String(pictureDurationSec(p)), 'the output length');
    assert.deepEqual(
      [optionOf(sound, '-map'), sound.includes('-vn'), sound.at(-1)],
      ['[aout]', true, `file:${files.soundPath}`],
    );
    assert.equal(optionOf(sound, '-c:a'), 'aac');
    // Only the picture (the longer half) and the mux report progress; every step keeps the graph on one thread.
    assert.deepEqual(
      [picture, sound, mux].map((args) => args.includes('-progress')),
      [true, false, true],
    );
    for (const args of [picture, sound, mux]) assert.equal(optionOf(args, '-filter_complex_threads'), '1');
    assert.deepEqual(
      inputsOf(mux).map((input) => input.at(-1)),
      [`file:${files.picturePath}`, `file:${files.soundPath}`],
    );
    assert.equal(optionOf(mux, '-c'), 'copy');
    assert.equal(optionOf(mux, '-movflags'), '+faststart');
    assert.equal(mux.at(-1), 'file:/w/o.mp4');
  });
});

describe('text layout', () => {
  const frame = { width: 720, height: 1280 };

  it('wraps words to 90 % of the width at the style’s size, keeps line breaks and breaks long words', () => {
    // title: 0.09 × 720 = 65 px, so 32.5 px a character; 90 % of 720 × 0.96 = 622 px: 19 characters a line.
    const layout = layoutText(
      monospace,
      {
        text: 'one two three four five six seven\n\nEIGHTNINETENELEVENTWELVETHIRTEEN end',
        style: 'title',
        position: 'center',
        background: 'none',
      },
      frame,
    );
    assert.equal(layout.fontSizePx, 65);
    assert.deepEqual(layout.lines, [
      'one two three four',
      'five six seven',
      '',
      'EIGHTNINETENELEVENT',
      'WELVETHIRTEEN end',
    ]);
    for (const line of layout.lines) assert.ok(monospace.advance(line, 65) <= 0.9 * 720);
    assert.equal(layout.align, 'center');
    // Centred block: the baselines are evenly spaced and the block's middle is the frame's.
    const steps = layout.baselines.slice(1).map((y, i) => y - layout.baselines[i]!);
    assert.ok(
      steps.every((step) => Math.abs(step - 1.25 * 65) <= 1),
      String(steps),
    );
    const top = layout.baselines[0]! - 0.8 * 65;
    const bottom = layout.baselines.at(-1)! + 0.2 * 65;
    assert.ok(Math.abs((top + bottom) / 2 - 640) <= 1);
  });

  it('puts a lower third bottom left on a box, a caption at the bottom centre, top when asked', () => {
    const lower = layoutText(
      monospace,
      { text: 'Jane Doe', style: 'lower_third', position: 'bottom', background: 'box' },
      frame,
    );
    assert.equal(lower.align, 'left');
    assert.equal(lower.fontSizePx, 43);
    assert.ok(lower.boxPaddingPx > 0);
    assert.equal(lower.leftPx, 36 + lower.boxPaddingPx);
    assert.ok(lower.baselines[0]! > 1280 * 0.85);
    const caption = layoutText(
      monospace,
      { text: 'hello', style: 'caption', position: 'top', background: 'box' },
      frame,
    );
    assert.equal(caption.align, 'center');
    assert.ok(caption.baselines[0]! < 1280 * 0.15);
  });

  it('measures with the bundled DejaVu Sans: Latin, Greek and Cyrillic lines stay within 90 %', () => {
    const font = bundledFont();
    const text = 'Καλημέρα κόσμε — Привет, мир — Grüße aus Köln, ça va très bien, merci beaucoup';
    const layout = layoutText(font, { text, style: 'title', position: 'center', background: 'none' }, frame);
    assert.ok(layout.lines.length >= 3, layout.lines.join(' | '));
    assert.equal(layout.lines.join(' '), text);
    for (const line of layout.lines)
      assert.ok(font.advance(line, layout.fontSizePx) <= TEXT_MAX_WIDTH_SHARE * 720);
  });
});

describe('text filters', () => {
  it('quotes a path for both levels of filter syntax', () => {
    assert.equal(filterValue('/a/b.txt'), "\\'/a/b.txt\\'");
    // ' → '\'' at the first level, then every \ ' [ ] , ; escaped for the graph.
    assert.equal(filterValue("/x/it's;[a],b"), "\\'/x/it\\'\\\\\\'\\'s\\;\\[a\\]\\,b\\'");
  });

  it('draws each line from its own file, literal, with the font, fades and its time; the words stay out', () => {
    const hostile = "'; drawbox=c=red:t=fill [x]; :text=%{pts} \\ end";
    const second = { startSec: 4, durationSec: 1, fadeInSec: 0, fadeOutSec: 0.5 };
    const p = plan([clip(video, 6)], {
      texts: [
        title('Hello world'),
        title(hostile, { ...second, style: 'caption', background: 'box', color: '#FF8800' }),
      ],
    });
    const files = textFiles(p, monospace);
    assert.deepEqual(
      files.map((f) => f.path),
      [textLinePath(p, 0, 0), ...files.slice(1).map((_f, j) => textLinePath(p, 1, j))],
    );
    assert.equal(files[0]!.contents, 'Hello world');
    assert.equal(
      files
        .slice(1)
        .map((f) => f.contents)
        .join(' '),
      hostile.replace(/\s+/g, ' '),
    );
    assert.ok(files.every((f) => f.path.startsWith('/work/ex_1/output.mp4.text')));

    const filters = textFilters(p, monospace, '/fonts/DejaVuSans.ttf');
    assert.equal(filters.length, files.length);
    for (const filter of filters) {
      assert.match(
        filter,
        /^drawtext=textfile=\\'\/work\/ex_1\/output\.mp4\.text\d-\d\.txt\\':fontfile=\\'\/fonts\/DejaVuSans\.ttf\\':expansion=none:/,
      );
    }
    assert.match(
      filters[0]!,
      /fontcolor=0xFFFFFF:alpha='clip\(min\(\(t-1\)\/0\.3,\(4-t\)\/0\.3\),0,1\)':enable='between\(t,1,4\)':x=\(w-text_w\)\/2:y=\d+-ascent$/,
    );
    assert.match(
      filters[1]!,
      /fontcolor=0xFF8800:box=1:boxcolor=black@0\.6:boxborderw=\d+:alpha='clip\(\(5-t\)\/0\.5,0,1\)':enable='between\(t,4,5\)'/,
    );
    const graph = pictureGraph({ ...p, texts: p.texts });
    assert.ok(!graph.includes('drawbox') && !graph.includes('%{pts}') && !graph.includes('Hello'), graph);
    assert.match(graph, /\[vclip0\]null\[vtext\];\[vtext\]drawtext=.*\[vout\]$/);
    assert.deepEqual(
      exportFiles(p).map((f) => f.path),
      textFiles(p).map((f) => f.path),
    );
  });

  it('answers no files and no filters without text', () => {
    assert.deepEqual(textFiles(plan([clip(video, 1)])), []);
    assert.deepEqual(textFilters(plan([clip(video, 1)])), []);
  });
});

describe('fast path blockers', () => {
  it('blocks the copy for any transition, motion, speed, fade or text', () => {
    const ok = clip(video, 20);
    assert.deepEqual(fastPathBlockers(plan([ok, ok])), []);
    const blocked = (p: ExportPlan) => fastPathBlockers(p).join('; ');
    assert.match(
      blocked(plan([ok, { ...ok, transitionIn: { type: 'fade', durationSec: 1 } }])),
      /clip 1: transition fade/,
    );
    assert.match(
      blocked(plan([{ ...ok, transitionIn: { type: 'fade', durationSec: 1 } }])),
      /clip 0: transition/,
    );
    assert.match(blocked(plan([{ ...ok, speed: 2, durationSec: 10 }])), /clip 0: speed 2/);
    assert.match(blocked(plan([{ ...ok, fadeInSec: 0.5 }])), /clip 0: fades/);
    assert.match(blocked(plan([ok], { texts: [title('Hi')] })), /1 text clip over the picture/);
    assert.match(blocked(plan([clip(image, 2, { motion: 'zoom_in' })])), /not a video/);
  });
});

describe('filters each effect needs', () => {
  const FILTERS_2018 = [
    'Filters:',
    '  T.. = Timeline support',
    ' ... adelay            A->A       Delay one or more audio channels.',
    ' ... afade             A->A       Fade in/out input audio.',
    ' ... atempo            A->A       Adjust audio tempo.',
    ' ... acrossfade        AA->A      Cross fade two input audio streams.',
    ' T.. drawtext          V->V       Draw text on top of video frames using libfreetype library.',
    ' ... perspective       V->V       Correct the perspective of video.',
    ' ... concat            N->N       Concatenate audio and video streams.',
  ].join('\n');

  it('finds the effects of a plan, and the ones a build without xfade cannot render', () => {
    const available = parseFilterList(FILTERS_2018);
    assert.ok(available.has('drawtext') && !available.has('xfade'));
    const p = plan(
      [
        clip(image, 3, { motion: 'zoom_in', transitionIn: { type: 'fade', durationSec: 1 } }),
        clip(video, 3, { speed: 2, transitionIn: { type: 'fadeblack', durationSec: 1 } }),
      ],
      { texts: [title('Hi')] },
    );
    assert.deepEqual(planFeatures(p), ['transitions', 'text', 'motion', 'speed']);
    assert.deepEqual(unsupportedFeatures(p, available), [{ feature: 'transitions', filter: 'xfade' }]);
    assert.deepEqual(unsupportedFeatures(p, new Set([...available, 'xfade'])), []);
    // A first clip's transition is a fade from black (`fade`), and no text, no motion: nothing needed.
    const plain = plan([clip(video, 3, { transitionIn: { type: 'fade', durationSec: 1 } })]);
    assert.deepEqual(unsupportedFeatures(plain, new Set()), []);
    assert.deepEqual(unsupportedFeatures(plan([clip(video, 3)], { texts: [title('Hi')] }), new Set()), [
      { feature: 'text', filter: 'drawtext' },
    ]);
    for (const name of ['afade', 'asetpts'])
      assert.ok((REQUIRED_FILTERS as readonly string[]).includes(name));
  });
});
