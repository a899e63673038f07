import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { clipFrames, pictureDurationSec, pictureGraph } from '../../workers/export/picture-graph.ts';
import { exportCommand } from '../../workers/export/command.ts';
import { inputArgs } from '../../workers/export/input-args.ts';
import { outputSize } from '../../workers/export/output-size.ts';
import { parseProgress, ProgressParser } from '../../workers/ffmpeg/progress.ts';
import { placementFilters } from '../../workers/export/placement.ts';
import { pictureSoundInput } from '../../workers/export/plan.ts';
import { soundGraph } from '../../workers/export/sound-graph.ts';
import {
  type ExportPlan,
  type ExportSource,
  type PictureClip,
  type SoundClip,
} from '../../workers/export/work-order.ts';
import { inputsOf, optionOf } from '../helpers/ffmpeg-run.ts';

const video: ExportSource = {
  path: '/staged/clip.mp4',
  demuxer: 'mov',
  kind: 'video',
  durationSec: 10,
  video: { codec: 'h264', width: 1920, height: 1080, fps: 25, pixFmt: 'yuv420p' },
  audio: { codec: 'aac', sampleRate: 44_100, channels: 2 },
};
const image: ExportSource = {
  path: '/staged/still.png',
  demuxer: 'png_pipe',
  kind: 'image',
  durationSec: null,
};
const voice: ExportSource = {
  path: '/staged/voice.mp3',
  demuxer: 'mp3',
  kind: 'audio',
  durationSec: 8,
  audio: { codec: 'mp3', sampleRate: 44_100, channels: 1 },
};

const clip = (source: ExportSource, durationSec: number, trimStartSec = 0): PictureClip => ({
  source,
  trimStartSec,
  durationSec,
  volume: 1,
});

function plan(picture: PictureClip[], fit: 'fit' | 'fill' = 'fit', sounds: SoundClip[] = []): ExportPlan {
  return {
    picture,
    sounds,
    output: { width: 720, height: 1280, fps: 30, fit, path: '/out/export.mp4' },
    filters: { loudnorm: true, sidechaincompress: true },
  };
}

describe('export builders', () => {
  it('sizes every aspect ratio with a short side of 720 px', () => {
    assert.deepEqual(outputSize('9:16'), { width: 720, height: 1280 });
    assert.deepEqual(outputSize('1:1'), { width: 720, height: 720 });
    assert.deepEqual(outputSize('4:5'), { width: 720, height: 900 });
    assert.deepEqual(outputSize('16:9'), { width: 1280, height: 720 });
    assert.deepEqual(outputSize('4:3'), { width: 960, height: 720 });
  });

  it('opens every input with the protocol allow-list and its probed demuxer, in the shared numbering', () => {
    const sound: SoundClip = {
      source: voice,
      track: 'voice',
      startSec: 1,
      trimStartSec: 0.5,
      durationSec: 3,
      volume: 1,
    };
    const args = inputArgs(plan([clip(image, 2), clip(video, 4, 1.5)], 'fit', [sound]));
    assert.equal(args.at(-2), '-i', 'no options after the last -i');
    const all = inputsOf(args);
    assert.equal(all.length, 4);
    for (const args of all) {
      assert.equal(optionOf(args, '-protocol_whitelist'), 'file,pipe');
      assert.ok(args.indexOf('-f') < args.indexOf('-i'), 'the demuxer is an input option');
    }
    assert.deepEqual(
      all.map((args) => [optionOf(args, '-f'), optionOf(args, '-i')]),
      [
        ['png_pipe', 'file:/staged/still.png'],
        ['mov', 'file:/staged/clip.mp4'],
        ['mp3', 'file:/staged/voice.mp3'],
        ['mov', 'file:/staged/clip.mp4'],
      ],
    );
    // The video clip's own sound: its file again, without video, the same window (plan.ts pictureSoundInput).
    const p = plan([clip(image, 2), clip(video, 4, 1.5)], 'fit', [sound]);
    assert.deepEqual([pictureSoundInput(p, 0), pictureSoundInput(p, 1)], [undefined, 3]);
    assert.deepEqual(all[3]!.slice(2, 7), ['-vn', '-ss', '1.5', '-t', '4']);
  });

  it('reads an image as its one frame (no loop, no length) and seeks a video or sound to its trim', () => {
    const sound: SoundClip = {
      source: voice,
      track: 'voice',
      startSec: 0,
      trimStartSec: 0.25,
      durationSec: 2.5,
      volume: 1,
    };
    const args = inputArgs(plan([clip(image, 2.5), clip(video, 4, 1.5), clip(video, 3)], 'fit', [sound]));
    assert.equal(args.at(-2), '-i', 'no options after the last -i');
    const [still, trimmed, untrimmed, audio] = inputsOf(args);
    // Looping the input would decode the file once per output frame: the graph repeats the scaled frame instead.
    assert.deepEqual(still, [
      ...['-protocol_whitelist', 'file,pipe', '-f', 'png_pipe', '-i', 'file:/staged/still.png'],
    ]);
    assert.deepEqual([optionOf(trimmed!, '-ss'), optionOf(trimmed!, '-t')], ['1.5', '4']);
    assert.deepEqual([optionOf(untrimmed!, '-ss'), optionOf(untrimmed!, '-t')], [undefined, '3']);
    assert.equal(optionOf(untrimmed!, '-loop'), undefined);
    assert.deepEqual([optionOf(audio!, '-ss'), optionOf(audio!, '-t')], ['0.25', '2.5']);
  });

  it('repeats an image clip by cloning its placed frame for exactly its frame count', () => {
    const chain = pictureGraph(plan([clip(image, 2.5)])).split(';')[0]!;
    const steps = chain.replace(/^\[0:v\]/, '').replace(/\[vclip0\]$/, '');
    // Its first frame only, scaled, placed and converted before `tpad`, which repeats the finished frame.
    const placement = placementFilters('fit', 720, 1280);
    assert.equal(
      steps,
      `trim=end_frame=1,setpts=PTS-STARTPTS,${placement},setsar=1,fps=30,format=yuv420p,tpad=stop_mode=clone:stop=75,trim=end_frame=75,setpts=PTS-STARTPTS`,
    );
    assert.doesNotMatch(chain, /loop/);
  });

  it('pads to the output size for fit and crops for fill, then 30 fps yuv420p into one concat', () => {
    const clips = [clip(video, 2), clip(image, 1)];
    const fit = pictureGraph(plan(clips, 'fit')).split(';');
    assert.equal(fit.length, 3);
    assert.equal(
      fit[0],
      `[0:v]setpts=PTS-STARTPTS,${placementFilters('fit', 720, 1280)},setsar=1,fps=30,format=yuv420p,tpad=stop_mode=clone:stop=60,trim=end_frame=60,setpts=PTS-STARTPTS[vclip0]`,
    );
    assert.match(fit[1]!, /^\[1:v\].*trim=end_frame=30,setpts=PTS-STARTPTS\[vclip1\]$/);
    assert.equal(fit[2], '[vclip0][vclip1]concat=n=2:v=1:a=0[vout]');

    const fill = pictureGraph(plan(clips, 'fill'));
    assert.ok(fill.includes(`${placementFilters('fill', 720, 1280)},setsar=1,fps=30`), fill);
    assert.doesNotMatch(fill, /[,\]]pad=/);
  });

  it('places a picture centred with even, equal bars (fit) or margins (fill), its size from its aspect ratio', () => {
    // Scale sizes are expressions on the display aspect ratio (`dar`), evaluated by ffmpeg; the bars are even
    // because the free space is rounded to a multiple of 4 (the real sizes: test/integration/export-picture).
    const fit = placementFilters('fit', 1280, 720);
    assert.equal(
      fit,
      "scale=w='if(gte(dar,1280/720),1280,max(2,1280+4*round((720*dar-1280)/4)))'" +
        ":h='if(gte(dar,1280/720),max(2,720+4*round((1280/dar-720)/4)),720)'" +
        ',pad=1280:720:(ow-iw)/2:(oh-ih)/2:black',
    );
    const fill = placementFilters('fill', 720, 900);
    assert.equal(
      fill,
      "scale=w='if(gte(dar,720/900),720+4*round((900*dar-720)/4),720)'" +
        ":h='if(gte(dar,720/900),900,900+4*round((720/dar-900)/4))'" +
        ',crop=720:900:(iw-ow)/2:(ih-oh)/2',
    );
  });

  it('cuts clips on the rounded timeline so the frames add up to the whole duration', () => {
    // 1.01 s each: 30.3 frames. Rounding each alone gives 90 frames (3.0 s); the timeline gives 91 (3.033 s).
    const three = plan([clip(video, 1.01), clip(video, 1.01), clip(video, 1.01)]);
    assert.deepEqual(clipFrames(three), [30, 31, 30]);
    assert.ok(Math.abs(pictureDurationSec(three) - 3.03) <= 0.5 / 30);
    // A clip shorter than half a frame is left out of the concat rather than making an empty segment.
    const tiny = plan([clip(video, 1), clip(image, 0.01), clip(video, 1)]);
    assert.deepEqual(clipFrames(tiny), [30, 0, 30]);
    assert.match(pictureGraph(tiny), /\[vclip0\]\[vclip2\]concat=n=2:v=1:a=0\[vout\]$/);
    assert.throws(() => pictureGraph(plan([])), RangeError);
  });

  it('makes the picture alone, into [vout]; the sound graph reads each clip’s own sound from its input', () => {
    const p = plan([clip(video, 1), clip(image, 0.01), clip(video, 1.01)]);
    const picture = pictureGraph(p);
    assert.doesNotMatch(picture, /:a\]|a=1|\[picture\]|\[pic\d/);
    assert.match(picture, /\[vout\]$/);
    const sound = soundGraph(p);
    // Clips 0 and 2 have sound: their files are opened again for it, after the picture's three inputs.
    assert.match(sound, /\[3:a:0\][^;]*\[pic0\]/);
    assert.match(sound, /\[4:a:0\][^;]*\[pic2\]/);
    assert.doesNotMatch(sound, /\[[012]:a|\[pic1\]|\[picture\]/);
    const args = exportCommand(p);
    assert.equal(args[args.indexOf('-filter_complex') + 1], `${picture};${soundGraph(p)}`);
  });

  it('builds the argv in order: globals, inputs, graph, maps, encoders, length, output', () => {
    const p = plan([clip(image, 1.5), clip(video, 2, 0.5)]);
    const sound = 'anullsrc=r=48000:cl=stereo,atrim=0:3.5[aout]';
    const args = exportCommand(p, sound);
    assert.deepEqual(args.slice(0, 8), [
      ...['-hide_banner', '-nostdin', '-y', '-nostats', '-progress', 'pipe:1'],
      ...['-filter_complex_threads', '1'],
    ]);
    const graphAt = args.indexOf('-filter_complex');
    assert.deepEqual(args.slice(8, graphAt), inputArgs(p));
    assert.equal(args[graphAt + 1], `${pictureGraph(p)};${sound}`);
    assert.deepEqual(args.slice(graphAt + 2, graphAt + 6), ['-map', '[vout]', '-map', '[aout]']);
    const tail = args.slice(graphAt + 6).join(' ');
    assert.ok(
      tail.includes(
        '-c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p -r 30 -c:a aac -ar 48000 -ac 2 -b:a 192k -movflags +faststart',
      ),
      tail,
    );
    assert.ok(tail.endsWith('-t 3.5 -f mp4 file:/out/export.mp4'), tail);
    assert.equal(args.filter((a) => a === '-i').length, 3, 'the image, the video, and the video’s sound');
  });

  it('reads -progress blocks into a growing fraction, done at progress=end', () => {
    const text = [
      'frame=0',
      'out_time_us=N/A',
      'out_time_ms=N/A',
      'progress=continue',
      'frame=30',
      'out_time_us=1000000',
      'out_time_ms=1000000',
      'out_time=00:00:01.000000',
      'progress=continue',
      'out_time_us=4000000',
      'progress=continue',
      'out_time_us=3900000',
      'progress=end',
      '',
    ].join('\n');
    assert.deepEqual(parseProgress(text, 4), [
      { fraction: 0, done: false },
      { fraction: 0.25, done: false },
      { fraction: 1, done: false },
      { fraction: 1, done: true },
    ]);
  });

  it('treats out_time_ms as microseconds, like out_time_us', () => {
    // ffmpeg 4.x writes no out_time_us: out_time_ms alone must not read 1000 times too far.
    assert.deepEqual(parseProgress('out_time_ms=2000000\nprogress=continue\n', 8), [
      { fraction: 0.25, done: false },
    ]);
    assert.deepEqual(parseProgress('out_time=00:00:06.000000\nprogress=continue\n', 8), [
      { fraction: 0.75, done: false },
    ]);
  });

  it('keeps a line split across chunks until its end arrives', () => {
    const parser = new ProgressParser(10);
    assert.deepEqual(parser.push('frame=12\nout_time_u'), []);
    assert.deepEqual(parser.push('s=50'), []);
    assert.deepEqual(parser.push('00000\r\nprogress=cont'), []);
    assert.deepEqual(parser.push('inue\nout_time_us=-23220\nprog'), [{ fraction: 0.5, done: false }]);
    assert.deepEqual(parser.push('ress=continue\n'), [{ fraction: 0.5, done: false }]);
    assert.deepEqual(parser.push('out_time_us=10000000\nprogress=end\n'), [{ fraction: 1, done: true }]);
  });
});
