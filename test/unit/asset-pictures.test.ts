// The pure parts of an asset's pictures (docs/editor.md, Pictures of assets): the ffmpeg arguments of the
// poster, the filmstrip and the waveform (hostile-input rules on every input, the right stream, sizes), the
// slicing of a waveform, the peak reader, and the slots that bound how many assets are worked on at once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  FILMSTRIP_FRAMES,
  FILMSTRIP_ONE_PASS_MAX_SEC,
  filmstripArgs,
  filmstripFrameCount,
  filmstripTimes,
  onePassArgs,
  PEAK_KEY,
  PLAIN_PATH,
  posterArgs,
  waveformArgs,
  waveformSlicing,
  WAVEFORM_MAX_PEAKS,
  type PictureInput,
} from '../../workers/pictures/picture-args.ts';
import { parsePeaks, peakFromDecibels } from '../../workers/pictures/peaks.ts';
import { createPictureSlots } from '../../src/editor/picture-slots.ts';
import { pictureMediaIds } from '../../src/editor/asset-pictures.ts';
import { isMediaId } from '../../src/platform/storage/media-id.ts';
import { inputsOf, optionOf } from '../helpers/ffmpeg-run.ts';

const video: PictureInput = {
  path: '/scratch/media',
  sniffed: { container: 'mov', demuxer: 'mov' },
  stream: 1,
};
const image: PictureInput = {
  path: '/scratch/media',
  sniffed: { container: 'png', demuxer: 'png_pipe' },
  stream: 0,
};

const POSTER_GRAPH = "scale=w='min(640,iw)':h='min(640,ih)':force_original_aspect_ratio=decrease,setsar=1";

/** Checks one input's options: the protocol allow-list, the sniffed demuxer, the file as `file:`. */
function assertHostileInput(input: string[], demuxer: string): void {
  assert.equal(optionOf(input, '-protocol_whitelist'), 'file,pipe');
  assert.equal(optionOf(input, '-f'), demuxer);
  assert.equal(input.at(-1), 'file:/scratch/media');
  if (demuxer === 'mov') assert.equal(optionOf(input, '-enable_drefs'), '0');
}

describe('poster arguments', () => {
  it('open the file as hostile input and write one JPEG frame of the chosen stream, fitted within 640 px', () => {
    const args = posterArgs(video, '/scratch/poster.jpg');
    const inputs = inputsOf(args);
    assert.equal(inputs.length, 1);
    assertHostileInput(inputs[0]!, 'mov');
    assert.equal(optionOf(args, '-filter_complex'), `[0:1]${POSTER_GRAPH}[poster]`);
    assert.equal(optionOf(args, '-map'), '[poster]');
    assert.equal(optionOf(args, '-frames:v'), '1');
    assert.equal(optionOf(args, '-c:v'), 'mjpeg');
    assert.equal(optionOf(args, '-map_metadata'), '-1', "none of the user's metadata");
    assert.equal(args.at(-1), 'file:/scratch/poster.jpg');
    assert.ok(!args.includes('-ss'), 'the first frame: no seek');
  });

  it('force the image demuxer the probe sniffed', () => {
    const inputs = inputsOf(posterArgs(image, '/scratch/poster.jpg'));
    assertHostileInput(inputs[0]!, 'png_pipe');
    assert.ok(!inputs[0]!.includes('-enable_drefs'));
  });
});

describe('filmstrip arguments', () => {
  it('take 10 frames, or one per frame of a shorter video', () => {
    assert.equal(filmstripFrameCount(5, 30), FILMSTRIP_FRAMES);
    assert.equal(filmstripFrameCount(3600, 25), FILMSTRIP_FRAMES);
    assert.equal(filmstripFrameCount(0.1, 30), 3);
    assert.equal(filmstripFrameCount(0.01, 30), 1);
    assert.equal(filmstripFrameCount(5, undefined), FILMSTRIP_FRAMES);
  });

  it('place each frame in the middle of its equal slice of the video', () => {
    assert.deepEqual(filmstripTimes(5, 10), [0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4.25, 4.75]);
    assert.deepEqual(filmstripTimes(2, 1), [1]);
  });

  it('read a video up to 2 minutes once, taking the first frame at or after each middle into one row', () => {
    const args = filmstripArgs(video, { durationSec: 5, frames: 10 }, '/scratch/strip.jpg');
    const inputs = inputsOf(args);
    assert.equal(inputs.length, 1);
    assertHostileInput(inputs[0]!, 'mov');
    assert.ok(!args.includes('-ss'));
    assert.equal(
      optionOf(args, '-filter_complex'),
      "[0:1]select='gte(t,(selected_n+0.5)*0.5)',scale=w='max(2,2*trunc(90*dar/2))':h=90,setsar=1,tile=10x1[strip]",
    );
    assert.equal(optionOf(args, '-map'), '[strip]');
    assert.equal(optionOf(args, '-frames:v'), '1');
    assert.equal(optionOf(args, '-c:v'), 'mjpeg');
    assert.equal(args.at(-1), 'file:/scratch/strip.jpg');
  });

  it(`seek one hostile input per frame of a video longer than ${FILMSTRIP_ONE_PASS_MAX_SEC} s, stacked in one row`, () => {
    const args = filmstripArgs(video, { durationSec: 300, frames: 3 }, '/scratch/strip.jpg');
    const inputs = inputsOf(args);
    assert.equal(inputs.length, 3);
    inputs.forEach((input, index) => {
      assertHostileInput(input, 'mov');
      assert.equal(optionOf(input, '-ss'), String([50, 150, 250][index]), 'seeked before -i');
    });
    const graph = optionOf(args, '-filter_complex')!;
    for (const index of [0, 1, 2])
      assert.ok(graph.includes(`[${index}:1]scale=`), `input ${index}, stream 1`);
    assert.match(graph, /h=90/);
    assert.match(graph, /\[f0\]\[f1\]\[f2\]hstack=inputs=3\[strip\]$/);
    assert.equal(optionOf(args, '-map'), '[strip]');
    assert.equal(optionOf(args, '-frames:v'), '1');
  });

  it('need no stack for one frame, and refuse none', () => {
    const args = filmstripArgs(video, { durationSec: 600, frames: 1 }, '/scratch/strip.jpg');
    assert.equal(optionOf(args, '-ss'), '300');
    assert.match(optionOf(args, '-filter_complex')!, /\[f0\]null\[strip\]$/);
    assert.throws(() => filmstripArgs(video, { durationSec: 5, frames: 0 }, '/scratch/strip.jpg'));
  });
});

describe('waveform slicing', () => {
  it('is 50 peaks a second, every slice whole samples', () => {
    assert.deepEqual(waveformSlicing(4, 48_000), { peaksPerSecond: 50, samplesPerPeak: 960 });
    assert.deepEqual(waveformSlicing(4, 44_100), { peaksPerSecond: 50, samplesPerPeak: 882 });
  });

  it('takes a divisor of an odd sample rate', () => {
    assert.deepEqual(waveformSlicing(4, 11_025), { peaksPerSecond: 49, samplesPerPeak: 225 });
    assert.deepEqual(waveformSlicing(4, 7), { peaksPerSecond: 7, samplesPerPeak: 1 });
  });

  it(`keeps long sound within ${WAVEFORM_MAX_PEAKS} peaks`, () => {
    const hour = waveformSlicing(3600, 48_000);
    assert.deepEqual(hour, { peaksPerSecond: 5, samplesPerPeak: 9600 });
    for (const [sec, rate] of [
      [3600, 44_100],
      [1000, 22_050],
      [86_400, 48_000],
    ] as const) {
      const { peaksPerSecond, samplesPerPeak } = waveformSlicing(sec, rate);
      assert.ok(peaksPerSecond >= 1 && Number.isInteger(samplesPerPeak), `${sec} s at ${rate}`);
      assert.ok(peaksPerSecond * sec <= Math.max(WAVEFORM_MAX_PEAKS, sec), `${sec} s at ${rate}`);
    }
    assert.throws(() => waveformSlicing(4, 0));
  });
});

describe('waveform arguments', () => {
  const slicing = { peaksPerSecond: 50, samplesPerPeak: 960 };

  it('decode the chosen stream as it is and print one peak level a slice to the peaks file', () => {
    const args = waveformArgs(video, { slicing, peaksFile: '/tmp/mf-pictures-Ab1/peaks.txt' });
    const inputs = inputsOf(args);
    assert.equal(inputs.length, 1);
    assertHostileInput(inputs[0]!, 'mov');
    assert.equal(
      optionOf(args, '-filter_complex'),
      `[0:1]asetnsamples=n=960:p=0,astats=metadata=1:reset=1,ametadata=mode=print:key=${PEAK_KEY}:file='/tmp/mf-pictures-Ab1/peaks.txt'[wave]`,
    );
    assert.ok(!args.includes('-ar') && !args.includes('-ac'), 'no resampling, no mix-down');
    assert.deepEqual(args.slice(-5), ['-map', '[wave]', '-f', 'null', '-']);
  });

  it('measure the peak level alone when the ffmpeg can', () => {
    const args = waveformArgs(video, { slicing, peaksFile: '/tmp/peaks.txt', peakAlone: true });
    assert.match(
      optionOf(args, '-filter_complex')!,
      /,astats=metadata=1:reset=1:measure_perchannel=none:measure_overall=Peak_level,/,
    );
  });

  it('refuse a peaks path that the filter syntax would read', () => {
    for (const peaksFile of [
      "/tmp/a'b/peaks.txt",
      '/tmp/a:b/peaks.txt',
      '/tmp/a,b/peaks.txt',
      '/tmp/a b/p',
    ]) {
      assert.throws(() => waveformArgs(video, { slicing, peaksFile }), /plain path/, peaksFile);
      assert.ok(!PLAIN_PATH.test(peaksFile));
    }
  });
});

describe('one read for every picture', () => {
  const wave = { stream: 2, slicing: { peaksPerSecond: 50, samplesPerPeak: 960 }, peaksFile: '/tmp/p.txt' };
  const input = { path: video.path, sniffed: video.sniffed };

  it("split a video's frames between its poster and its filmstrip, beside its sound's peaks", () => {
    const args = onePassArgs(input, {
      poster: { stream: 1, output: '/scratch/poster.jpg' },
      filmstrip: { stream: 1, durationSec: 5, frames: 10, output: '/scratch/strip.jpg' },
      waveform: wave,
    });
    const inputs = inputsOf(args);
    assert.equal(inputs.length, 1, 'one read of the file');
    assertHostileInput(inputs[0]!, 'mov');
    const graph = optionOf(args, '-filter_complex')!.split(';');
    assert.deepEqual(graph, [
      '[0:1]split=2[for_poster][for_strip]',
      `[for_poster]${POSTER_GRAPH}[poster]`,
      optionOf(filmstripArgs(video, { durationSec: 5, frames: 10 }, '/x'), '-filter_complex')!.replace(
        '[0:1]',
        '[for_strip]',
      ),
      optionOf(waveformArgs({ ...video, stream: 2 }, wave), '-filter_complex')!,
    ]);
    const outputs = args.slice(args.indexOf('-filter_complex') + 2);
    assert.deepEqual(outputs, [
      ...['-map', '[poster]', '-frames:v', '1', '-map_metadata', '-1', '-c:v', 'mjpeg', '-q:v', '5'],
      ...['-f', 'image2', '-update', '1', 'file:/scratch/poster.jpg'],
      ...['-map', '[strip]', '-frames:v', '1', '-map_metadata', '-1', '-c:v', 'mjpeg', '-q:v', '5'],
      ...['-f', 'image2', '-update', '1', 'file:/scratch/strip.jpg'],
      ...['-map', '[wave]', '-f', 'null', '-'],
    ]);
  });

  it('take any two, and refuse a long video (seeked) or nothing at all', () => {
    const args = onePassArgs(input, { poster: { stream: 0, output: '/p.jpg' }, waveform: wave });
    assert.ok(!optionOf(args, '-filter_complex')!.includes('split'));
    assert.throws(() =>
      onePassArgs(input, { filmstrip: { stream: 1, durationSec: 600, frames: 10, output: '/s.jpg' } }),
    );
    assert.throws(() => onePassArgs(input, {}));
  });
});

describe('the peak reader', () => {
  it('turns dBFS into a share of full scale, silence 0, never above 1', () => {
    assert.equal(peakFromDecibels(0), 1);
    assert.equal(peakFromDecibels(-6.0206), 0.5);
    assert.equal(peakFromDecibels(-20), 0.1);
    assert.equal(peakFromDecibels(-Infinity), 0);
    assert.equal(peakFromDecibels(Number.NaN), 0);
    assert.equal(peakFromDecibels(3.2), 1);
    assert.equal(peakFromDecibels(-120), 0);
  });

  it('reads one peak per slice, in order', () => {
    const text = [
      'frame:0    pts:0       pts_time:0',
      `${PEAK_KEY}=-6.020600`,
      'frame:1    pts:960     pts_time:0.02',
      `${PEAK_KEY}=-inf`,
      'frame:2    pts:1920    pts_time:0.04',
      `${PEAK_KEY}=-12.041200`,
      'frame:3    pts:2880    pts_time:0.06',
      `${PEAK_KEY}=0.500000`,
      '',
    ].join('\n');
    assert.deepEqual(parsePeaks(text), [0.5, 0, 0.25, 1]);
  });

  it('keeps peaks aligned with time when a level is missing or unreadable, and ignores other keys', () => {
    const text = [
      'frame:0 pts:0 pts_time:0',
      'lavfi.astats.Overall.RMS_level=-9.0',
      'frame:1 pts:960 pts_time:0.02',
      `${PEAK_KEY}=nan`,
      'frame:2 pts:1920 pts_time:0.04',
      `${PEAK_KEY}=-20.000000`,
    ].join('\n');
    assert.deepEqual(parsePeaks(text), [0, 0, 0.1]);
    assert.deepEqual(parsePeaks(''), []);
    assert.deepEqual(parsePeaks(`${PEAK_KEY}=-6`), [], 'a level before any frame belongs to no slice');
  });
});

describe('picture files', () => {
  it('have media ids derived from their file, distinct per picture and per file', () => {
    const one = pictureMediaIds('med_AAAAAAAAAAAAAAAAAAAAAAAA.mp4');
    const again = pictureMediaIds('med_AAAAAAAAAAAAAAAAAAAAAAAA.mp4');
    const other = pictureMediaIds('med_BBBBBBBBBBBBBBBBBBBBBBBB.mp4');
    assert.deepEqual(one, again);
    assert.match(one.poster, /\.jpg$/);
    assert.match(one.filmstrip, /\.jpg$/);
    assert.match(one.waveform, /\.json$/);
    const all = [...Object.values(one), ...Object.values(other)];
    assert.equal(new Set(all).size, 6);
    for (const id of all) assert.ok(isMediaId(id), id);
  });
});

describe('picture slots', () => {
  it('run at most the limit at once, and give a freed slot to new assets before older ones', async () => {
    const slots = createPictureSlots(1);
    const order: string[] = [];
    let release!: () => void;
    const first = slots.run('new', () => new Promise<void>((resolve) => (release = resolve)));
    const older = slots.run('backfill', async () => void order.push('backfill'));
    const newer = slots.run('new', async () => void order.push('new'));
    assert.equal(slots.waiting('backfill'), 1);
    assert.equal(slots.waiting('new'), 1);
    release();
    await Promise.all([first, older, newer]);
    assert.deepEqual(order, ['new', 'backfill']);
    assert.equal(slots.waiting('new') + slots.waiting('backfill'), 0);
  });

  it('free the slot when the work fails', async () => {
    const slots = createPictureSlots(1);
    await assert.rejects(slots.run('new', () => Promise.reject(new Error('boom'))));
    assert.equal(await slots.run('backfill', async () => 7), 7);
  });
});
