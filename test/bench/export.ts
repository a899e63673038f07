// The export (docs/editor.md, Export): the service (from dist/, as users run it, one jongodb) against one ffmpeg
// command written out literally below, the fast path against re-encoding, export speed, and whether the event
// loop stays free while exports run. Every render is a real one: the service keeps an export of an unchanged
// (video, revision, fit) and answers it at once, so before each timed export the project is renamed
// (PATCH name: a new revision, the same timeline) and every answer must name a new asset.
//
// 1. Service vs literal ffmpeg (budget <= 1.15×). 12 × 5 s 1280x720 (16:9) 30 fps h264/AAC clips into a 9:16
//    video: the output is 720x1280, so every clip is scaled to 720x405 and padded (`fit`), which forces the
//    re-encode path; a voice (wav, mono 48 kHz, 20 s, a speech-like tone with pauses) at start_sec 5, volume
//    0.9; a music clip (mp3, stereo 44.1 kHz, 60 s) from 0, volume 0.4. The baseline is LITERAL_ARGS: the same
//    work on the same files, hand-written (scale/pad/fps per clip, concat with the clips' audio, voice and
//    music at their volumes, music ducked by sidechaincompress under the voice, amix, loudnorm to −14 LUFS,
//    libx264 veryfast crf 20 yuv420p 30 fps, AAC 48 kHz stereo 192k, +faststart — the encoder settings of
//    workers/export/command.ts), run under `nice -n 10` as the service runs its ffmpeg. The service's time is
//    the whole POST /export (staging copies, probes, render, output probe, store, asset); the literal one is
//    the ffmpeg process's. Rounds alternate service, literal, … after one untimed warm-up of each; medians.
// 2. Fast path vs re-encode (budget >= 5×). 12 × 5 s clips already in the 9:16 output format (720x1280, 30 fps
//    CFR, h264 yuv420p, AAC), untrimmed, plus the same voice and music: the fast path (picture copied, sound
//    mixed). Re-encode: a second project with the same files and clips, except clip 0 has trim_start_sec
//    0.001 (a fast-path blocker, workers/export/fast-path.ts `fastPathBlockers`; same frame count), so the
//    service re-encodes the same timeline. Rounds alternate; medians. The first fast export's picture is
//    checked to be copied (the first 30 video packets hash as the source's).
// 3. Export speed: output seconds per wall second, for every path above.
// 4. Event loop: GET /healthz every HEALTHZ_EVERY_MS from the bench, sequential requests on one keep-alive
//    connection (node:http Agent, one socket), the time from sending to the full body; without exports
//    (baseline), during two concurrent re-encode exports (EXPORT_CONCURRENCY=2, the service here), and during
//    one (below saturation: one export's ffmpeg on 2 cores). /healthz pings MongoDB (jongodb), so that round
//    trip is in every figure. Beside it: the service's own event-loop delay p99 (its /metrics sampler), the
//    bench's own, the machine's CPU, and the requests split at the moment the last render started (a worker
//    thread watches the service's children): staging (copies, probes) vs rendering.
// 5. Effects (BENCH_EXPORT_ONLY=effects runs it alone). The 12 landscape clips of 1 into the 9:16 video again,
//    each cut a 0.5 s transition (the eight types in turn), a title over seconds 1 to 4 (fading in and out,
//    from a text file as the service draws it), and the music at 0.4 under the clips' own sound cross-fading
//    over each transition: 54.5 s. (a) The service's `final` against `effectsLiteralArgs` (budget <= 1.15×),
//    one ffmpeg command written out by hand doing the same: per clip scale/pad/fps, eleven xfades, drawtext,
//    each clip's sound faded in and out over the transitions and delayed to its place, the music mixed in,
//    loudnorm, the encoder settings of `final`. (b) `preview` against
//    `final` of the same timeline through the service (budget >= 3× faster). Rounds alternate; medians.
// 6. Segments (BENCH_EXPORT_ONLY=segments runs it alone). A second service that renders in segments
//    (EXPORT_SEGMENTS=true, docs/operator.md, The segment cache) and the timeline of 1. Each round makes a new
//    project of the same files (its segment cache is empty) and times (a) its first export, cold, against the
//    literal command of 1 (budget <= 1.05×), then (b) the export again after one clip changed — clip 6 trimmed
//    to 4 s, which changes its one segment and the whole sound — against (a) of the same round (budget <= 15 %
//    of it), and (c) again after a title is added over seconds 16 to 19, which changes the picture of one
//    segment and not the sound (same budget), counting the segments encoded and reused and whether the sound
//    was reused from the service's /metrics. Rounds alternate; medians.
// 7. Cluster (BENCH_EXPORT_ONLY=cluster runs it alone). The local cluster of deploy/local/cluster.sh with 1
//    service node, then with 3 (3 nats-server and one jongodb either way, EXPORT_SEGMENTS=true, the media in
//    GridFS): the timeline of 1 in a new project per round, exported through node-1, whose segments any node
//    may encode (docs/operator.md, Segments across a cluster). Judged: CPU seconds per output second of every
//    process of the cluster (nodes with their ffmpeg children, NATS, the database), 3 nodes against 1 (budget
//    <= +15 %); printed: wall times and each node's share of the segments encoded. After one warm-up round
//    each; medians.
// Not judged, printed beside the verdicts: CPU time (the service process with every child it reaped, and the
// literal ffmpeg's), which other load on the machine distorts less than wall time, and each service export's
// phases (before the first render child, the renders, after), from its children seen in /proc every 20 ms.
import { TRANSITION_TYPES } from '../../schemas/timeline-terms.ts';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Agent, get } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';
import { editorClient, editorUser, type ExportAnswer } from '../helpers/editor.ts';
import { startLocalCluster } from '../helpers/local-cluster.ts';
import { startMongo } from '../helpers/mongo.ts';
import { startService, type ApiAnswer, type RunningService } from '../helpers/service.ts';
import { sampleValue, segmentCounters } from '../helpers/prometheus.ts';
import { load1, percentile, verdict } from '../helpers/bench.ts';

const run = promisify(execFile);

const ROUNDS = Number(process.env.BENCH_EXPORT_ROUNDS ?? 4);
const CLIPS = 12;
const CLIP_SEC = 5;
const VOICE_SEC = 20;
const VOICE_START_SEC = 5;
const MUSIC_SEC = 60;
const VOICE_VOLUME = 0.9;
const MUSIC_VOLUME = 0.4;
/** The niceness the service runs ffmpeg with (workers/ffmpeg/runner.ts DEFAULT_NICENESS). */
const NICENESS = 10;
const SERVICE_BUDGET = 1.15;
const PREVIEW_BUDGET = 3;
const TRANSITION_SEC = 0.5;
const TITLE = 'MediaForge effects bench';
/**
 * `BENCH_EXPORT_ONLY=classic`: only scenarios 1–4; `effects`: only scenario 5; `segments`: only scenario 6;
 * `cluster`: only scenario 7.
 */
const ONLY = process.env.BENCH_EXPORT_ONLY;
const FAST_PATH_BUDGET = 5;
const SEGMENTS_BUDGET = 1.05;
const REEXPORT_BUDGET = 0.15;
/** The clip scenario 6 trims, and to what. */
const CHANGED_CLIP = 6;
const CHANGED_DURATION_SEC = 4;
const CLUSTER_CPU_BUDGET = 1.15;
const HEALTHZ_P99_MS = 10;
const HEALTHZ_EVERY_MS = 20;
const HEALTHZ_BASELINE_MS = 5000;

const { ffmpeg, ffprobe } = resolveFfmpeg({
  ffmpegPath: process.env.FFMPEG_PATH,
  ffprobePath: process.env.FFPROBE_PATH,
});
const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

// ---- the literal command (one ffmpeg command written out literally, as a person would write it) ----

/**
 * What a person would type for scenario 1, run in the folder of the bench's files. Not produced by the
 * export's builders: hand-written, every input and chain spelled out.
 */
// prettier-ignore
const LITERAL_ARGS = [
  '-hide_banner', '-nostdin', '-y', '-loglevel', 'error',
  '-i', 'landscape00.mp4', '-i', 'landscape01.mp4', '-i', 'landscape02.mp4', '-i', 'landscape03.mp4',
  '-i', 'landscape04.mp4', '-i', 'landscape05.mp4', '-i', 'landscape06.mp4', '-i', 'landscape07.mp4',
  '-i', 'landscape08.mp4', '-i', 'landscape09.mp4', '-i', 'landscape10.mp4', '-i', 'landscape11.mp4',
  '-i', 'voice.wav', '-i', 'music.mp3',
  '-filter_complex', [
    '[0:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v0];',
    '[1:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v1];',
    '[2:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v2];',
    '[3:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v3];',
    '[4:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v4];',
    '[5:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v5];',
    '[6:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v6];',
    '[7:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v7];',
    '[8:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v8];',
    '[9:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v9];',
    '[10:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v10];',
    '[11:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v11];',
    '[v0][0:a][v1][1:a][v2][2:a][v3][3:a][v4][4:a][v5][5:a][v6][6:a][v7][7:a][v8][8:a][v9][9:a][v10][10:a][v11][11:a]',
    'concat=n=12:v=1:a=1[video][clipsound];',
    '[12:a]aformat=sample_rates=48000:channel_layouts=stereo,volume=0.9,adelay=5000|5000,apad=whole_dur=60,',
    'asplit=2[voice][voicekey];',
    '[13:a]aformat=sample_rates=48000:channel_layouts=stereo,volume=0.4[music];',
    '[music][voicekey]sidechaincompress=threshold=0.02:ratio=8:attack=20:release=300[ducked];',
    '[clipsound][voice][ducked]amix=inputs=3:duration=first:normalize=0,',
    'loudnorm=I=-14:TP=-1.5:LRA=11,aresample=48000[audio]',
  ].join(''),
  '-map', '[video]', '-map', '[audio]',
  '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '20', '-pix_fmt', 'yuv420p', '-r', '30',
  '-c:a', 'aac', '-ar', '48000', '-ac', '2', '-b:a', '192k',
  '-movflags', '+faststart', '-t', '60',
  'literal.mp4',
];

/**
 * Scenario 5 as a person would type it, in the folder of the bench's files (`title.txt` holds TITLE; the font
 * is the one the service draws with). Hand-written like LITERAL_ARGS: offsets are 4.5 s apart (5 s clips
 * overlapping by 0.5 s).
 */
// prettier-ignore
const effectsLiteralArgs = (font: string) => [
  '-hide_banner', '-nostdin', '-y', '-loglevel', 'error',
  '-i', 'landscape00.mp4', '-i', 'landscape01.mp4', '-i', 'landscape02.mp4', '-i', 'landscape03.mp4',
  '-i', 'landscape04.mp4', '-i', 'landscape05.mp4', '-i', 'landscape06.mp4', '-i', 'landscape07.mp4',
  '-i', 'landscape08.mp4', '-i', 'landscape09.mp4', '-i', 'landscape10.mp4', '-i', 'landscape11.mp4',
  '-i', 'music.mp3',
  '-vn', '-i', 'landscape00.mp4', '-vn', '-i', 'landscape01.mp4', '-vn', '-i', 'landscape02.mp4',
  '-vn', '-i', 'landscape03.mp4', '-vn', '-i', 'landscape04.mp4', '-vn', '-i', 'landscape05.mp4',
  '-vn', '-i', 'landscape06.mp4', '-vn', '-i', 'landscape07.mp4', '-vn', '-i', 'landscape08.mp4',
  '-vn', '-i', 'landscape09.mp4', '-vn', '-i', 'landscape10.mp4', '-vn', '-i', 'landscape11.mp4',
  '-filter_complex', [
    '[0:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v0];',
    '[1:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v1];',
    '[2:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v2];',
    '[3:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v3];',
    '[4:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v4];',
    '[5:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v5];',
    '[6:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v6];',
    '[7:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v7];',
    '[8:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v8];',
    '[9:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v9];',
    '[10:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v10];',
    '[11:v]scale=720:1280:force_original_aspect_ratio=decrease,pad=720:1280:(ow-iw)/2:(oh-ih)/2:black,setsar=1,fps=30[v11];',
    '[v0][v1]xfade=transition=fadeblack:duration=0.5:offset=4.5[x1];',
    '[x1][v2]xfade=transition=fadewhite:duration=0.5:offset=9[x2];',
    '[x2][v3]xfade=transition=wipeleft:duration=0.5:offset=13.5[x3];',
    '[x3][v4]xfade=transition=wiperight:duration=0.5:offset=18[x4];',
    '[x4][v5]xfade=transition=slideleft:duration=0.5:offset=22.5[x5];',
    '[x5][v6]xfade=transition=slideright:duration=0.5:offset=27[x6];',
    '[x6][v7]xfade=transition=circleopen:duration=0.5:offset=31.5[x7];',
    '[x7][v8]xfade=transition=fade:duration=0.5:offset=36[x8];',
    '[x8][v9]xfade=transition=fadeblack:duration=0.5:offset=40.5[x9];',
    '[x9][v10]xfade=transition=fadewhite:duration=0.5:offset=45[x10];',
    '[x10][v11]xfade=transition=wipeleft:duration=0.5:offset=49.5[x11];',
    `[x11]drawtext=textfile=title.txt:expansion=none:fontfile=${font}:fontsize=65:fontcolor=white:`,
    "x=(w-text_w)/2:y=(h-text_h)/2:alpha='clip(min((t-1)/0.3,(4-t)/0.3),0,1)':enable='between(t,1,4)'[video];",
    // Each clip's sound fades out over its last 0.5 s and the next one's in over its first, overlapping
    // (a cross-fade), each delayed to where its clip starts, read from the clips' files opened a second time
    // without video (inputs 13 to 24), as the service does: read from the picture's inputs, the sound wanted
    // early makes ffmpeg 5.1 decode those files' frames early and hold them (3.4 GB and half as much CPU again
    // here); a chain of `acrossfade` is worse still.
    '[13:a]afade=t=out:st=4.5:d=0.5[a0];',
    '[14:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=4500|4500[a1];',
    '[15:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=9000|9000[a2];',
    '[16:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=13500|13500[a3];',
    '[17:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=18000|18000[a4];',
    '[18:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=22500|22500[a5];',
    '[19:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=27000|27000[a6];',
    '[20:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=31500|31500[a7];',
    '[21:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=36000|36000[a8];',
    '[22:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=40500|40500[a9];',
    '[23:a]afade=t=in:d=0.5,afade=t=out:st=4.5:d=0.5,adelay=45000|45000[a10];',
    '[24:a]afade=t=in:d=0.5,adelay=49500|49500[a11];',
    '[12:a]aformat=sample_rates=48000:channel_layouts=stereo,volume=0.4[music];',
    '[a0][a1][a2][a3][a4][a5][a6][a7][a8][a9][a10][a11][music]amix=inputs=13:duration=longest:normalize=0,',
    'loudnorm=I=-14:TP=-1.5:LRA=11,aresample=48000[audio]',
  ].join(''),
  '-map', '[video]', '-map', '[audio]',
  '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '20', '-pix_fmt', 'yuv420p', '-r', '30',
  '-c:a', 'aac', '-ar', '48000', '-ac', '2', '-b:a', '192k',
  '-movflags', '+faststart', '-t', '54.5',
  'effects-literal.mp4',
];

// ---- media ----

/** Makes the bench's files in `dir` with the resolved ffmpeg. */
async function makeMedia(dir: string): Promise<void> {
  const make = (...args: string[]) =>
    run(ffmpeg, ['-hide_banner', '-nostdin', '-v', 'error', '-y', ...args], { cwd: dir });
  const clip = (name: string, size: string, i: number) =>
    make(
      ...['-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=30,hue=h=${i * 30}`],
      ...['-f', 'lavfi', '-i', `sine=frequency=${300 + 40 * i}:sample_rate=48000`],
      ...[
        '-t',
        String(CLIP_SEC),
        '-c:v',
        'libx264',
        '-preset',
        'veryfast',
        '-crf',
        '23',
        '-pix_fmt',
        'yuv420p',
      ],
      ...['-c:a', 'aac', '-ac', '2', '-ar', '48000', '-b:a', '128k', name],
    );
  const names = Array.from({ length: CLIPS }, (_, i) => String(i).padStart(2, '0'));
  // Two at a time: the machine has two cores.
  for (let i = 0; i < CLIPS; i += 2) {
    await Promise.all(
      names
        .slice(i, i + 2)
        .flatMap((n, j) => [
          clip(`landscape${n}.mp4`, '1280x720', i + j),
          clip(`portrait${n}.mp4`, '720x1280', i + j),
        ]),
    );
  }
  // Speech-like: a voiced tone with harmonics, syllables at 4 Hz, a pause every 2 s.
  const voice =
    '0.5*(sin(2*PI*180*t)+0.5*sin(2*PI*360*t)+0.25*sin(2*PI*540*t))*(0.5+0.5*sin(2*PI*4*t))*gt(sin(2*PI*0.5*t)+0.6\\,0)';
  const chord = '0.15*(sin(2*PI*220*t)+sin(2*PI*277.18*t)+sin(2*PI*329.63*t))';
  await Promise.all([
    make('-f', 'lavfi', '-i', `aevalsrc=${voice}:s=48000:d=${VOICE_SEC}`, '-c:a', 'pcm_s16le', 'voice.wav'),
    make(
      ...['-f', 'lavfi', '-i', `aevalsrc=${chord}|${chord}:s=44100:d=${MUSIC_SEC}`],
      ...['-c:a', 'libmp3lame', '-b:a', '192k', 'music.mp3'],
    ),
  ]);
}

async function probe(path: string) {
  const { stdout } = await run(ffprobe, [
    ...['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', path],
  ]);
  const parsed = JSON.parse(stdout) as {
    format: { duration: string };
    streams: {
      codec_type: string;
      codec_name: string;
      width?: number;
      height?: number;
      r_frame_rate?: string;
      sample_rate?: string;
      channels?: number;
    }[];
  };
  const streams = parsed.streams.map((s) =>
    s.codec_type === 'video'
      ? `${s.codec_name} ${s.width}x${s.height} ${s.r_frame_rate}`
      : `${s.codec_name} ${s.sample_rate} Hz ${s.channels} ch`,
  );
  return {
    durationSec: Number(parsed.format.duration),
    text: `${Number(parsed.format.duration).toFixed(3)} s, ${streams.join(' + ')}`,
  };
}

/** The md5 of the first `frames` video packets as stored (no decode): equal for a copied stream. */
async function packetsMd5(path: string, frames: number): Promise<string> {
  const { stdout } = await run(ffmpeg, [
    ...['-hide_banner', '-nostdin', '-v', 'error', '-i', path, '-map', '0:v:0', '-c', 'copy', '-bsf:v'],
    ...['h264_mp4toannexb', '-frames:v', String(frames), '-f', 'md5', '-'],
  ]);
  return stdout.trim();
}

// ---- machine figures ----

function machineTicks(): { busy: number; total: number } {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const ticks = values.map(Number);
  const total = ticks.reduce((sum, v) => sum + v, 0);
  return { busy: total - ticks[3]! - ticks[4]!, total };
}

/** The machine's CPU between two snapshots, as `N % of 200 %`. */
function machineCpu(a: ReturnType<typeof machineTicks>, b: ReturnType<typeof machineTicks>): string {
  const cores = availableParallelism();
  return `${(((b.busy - a.busy) / (b.total - a.total)) * 100 * cores).toFixed(0)} % of ${cores * 100} %`;
}

/** A process's own CPU (utime + stime), and with `children` that of its exited, reaped children too (ms). */
function cpuMsOf(pid: number | 'self', children = false): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const own = Number(fields[11]) + Number(fields[12]);
  return (children ? own + Number(fields[13]) + Number(fields[14]) : own) * TICK_MS;
}

/** One child process of the service, seen by polling /proc. */
interface ChildSpan {
  kind: 'probe' | 'packet-read' | 'render' | 'sound' | 'other';
  first: number;
  last: number;
}

/**
 * Watches the children of `parentPid` every 20 ms (their ppid in /proc/<pid>/stat; `nice` execs ffmpeg in
 * place, so the pid stays): ffprobe runs (staging probes, the output's probe), the probe's packet read
 * (`-xerror`), the sound made apart from the picture (the children that write or read the mixdown) and the
 * renders (`-filter_complex` or the fast path's copy, `-format_whitelist`).
 */
function watchChildren(parentPid: number) {
  const spans = new Map<number, ChildSpan>();
  const classify = (pid: string): ChildSpan['kind'] => {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    if (argv.some((arg) => /(^|\/)ffprobe$/.test(arg))) return 'probe';
    if (argv.includes('-xerror')) return 'packet-read';
    if (argv.some((arg) => arg.endsWith('.mixdown.wav'))) return 'sound';
    if (argv.includes('-filter_complex') || argv.includes('-format_whitelist')) return 'render';
    return 'other';
  };
  const scan = () => {
    const at = performance.now();
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== parentPid) continue;
        const span = spans.get(Number(name));
        if (span && span.kind !== 'other') span.last = at;
        else spans.set(Number(name), { kind: classify(name), first: span?.first ?? at, last: at });
      } catch {
        // gone between the listing and the read
      }
    }
  };
  scan();
  const timer = setInterval(scan, 20);
  return {
    stop(): ChildSpan[] {
      clearInterval(timer);
      return [...spans.values()];
    },
  };
}

// ---- the literal command, timed ----

/** Runs LITERAL_ARGS under `nice -n NICENESS` in `dir`: wall and CPU time (ffmpeg's, from our reaped children). */
function runLiteral(dir: string, args: string[] = LITERAL_ARGS): Promise<{ ms: number; cpuMs: number }> {
  return new Promise((resolve, reject) => {
    const cpuBefore = cpuMsOf('self', true) - cpuMsOf('self');
    const started = performance.now();
    const child = spawn('nice', ['-n', String(NICENESS), ffmpeg, ...args], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      const cpuMs = cpuMsOf('self', true) - cpuMsOf('self') - cpuBefore;
      if (code === 0) resolve({ ms, cpuMs });
      else reject(new Error(`literal ffmpeg exited ${code}: ${log.slice(-3000)}`));
    });
  });
}

// ---- the service side ----

type Api = ReturnType<typeof editorClient>;

/** A 9:16 project with `clips` on the video track, the voice at 5 s and the music from 0. */
async function timelineProject(
  api: Api,
  dir: string,
  name: string,
  clips: string[],
  firstClip: Record<string, unknown> = {},
): Promise<string> {
  const project = await api.createProject({ name, aspect_ratio: '9:16' });
  const upload = async (file: string, type: string) => {
    const answer = await api.upload(project.id, readFileSync(join(dir, file)), type);
    if (answer.status !== 200 && answer.status !== 201)
      throw new Error(`upload ${file}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body.asset.id;
  };
  const add = async (body: Record<string, unknown>) => {
    const answer = await api.addClip(project.id, body);
    if (answer.status !== 200 && answer.status !== 201)
      throw new Error(`add clip: ${answer.status} ${JSON.stringify(answer.body)}`);
  };
  for (const [i, file] of clips.entries()) {
    await add({ track: 'video', asset_id: await upload(file, 'video/mp4'), ...(i === 0 ? firstClip : {}) });
  }
  const voice = await upload('voice.wav', 'audio/wav');
  const music = await upload('music.mp3', 'audio/mpeg');
  await add({ track: 'voice', asset_id: voice, start_sec: VOICE_START_SEC, volume: VOICE_VOLUME });
  await add({ track: 'music', asset_id: music, start_sec: 0, volume: MUSIC_VOLUME });
  return project.id;
}

const seenAssets = new Set<string>();
let renames = 0;

/** One export through the service: its answer, wall and CPU time, and where the wall time went. */
interface Exported {
  answer: ExportAnswer;
  ms: number;
  /** The service process and every child it reaped during the export (probes, ffmpeg), ms. */
  cpuMs: number;
  /** Of `cpuMs`, the children's alone (ms). */
  childrenCpuMs: number;
  /** POST → the first render child; the render children's span; the last one's end → the answer (ms). */
  phases?: { before: number; render: number; after: number; probes: number; renders: number };
  /** The sound made apart from the picture: its mixdown's start to its encoder's end (ms), when there is one. */
  soundChainMs?: number;
}

/**
 * Renames the project (a new revision, the same timeline), then exports it. With `watch`, the service's
 * children are followed for the phases, and the export's pictures are waited for after its answer (not while
 * two exports overlap: CPU and phases would mix).
 */
async function exportOnce(
  api: Api,
  service: RunningService,
  projectId: string,
  watch = true,
  body: Record<string, unknown> = {},
): Promise<Exported> {
  const renamed = await api.send('PATCH', `/${projectId}`, { body: { name: `export bench ${++renames}` } });
  if (renamed.status !== 200) throw new Error(`rename: ${renamed.status} ${JSON.stringify(renamed.body)}`);
  const pid = service.proc.child.pid!;
  const watcher = watch ? watchChildren(pid) : undefined;
  const cpuBefore = cpuMsOf(pid, true);
  const ownBefore = cpuMsOf(pid);
  const started = performance.now();
  const answer = await api.exportVideo(projectId, body);
  const ended = performance.now();
  const cpuMs = cpuMsOf(pid, true) - cpuBefore;
  const childrenCpuMs = cpuMs - (cpuMsOf(pid) - ownBefore);
  const spans = watcher?.stop() ?? [];
  if (answer.status !== 200) throw new Error(`export: ${answer.status} ${JSON.stringify(answer.body)}`);
  // A stored export answered again would time a cache look-up, not a render.
  if (seenAssets.has(answer.body.asset_id))
    throw new Error(`export answered a stored asset ${answer.body.asset_id}: not a render`);
  seenAssets.add(answer.body.asset_id);
  const renders = spans.filter((span) => span.kind === 'render' || span.kind === 'sound');
  const sound = spans.filter((span) => span.kind === 'sound');
  const phases =
    renders.length > 0
      ? {
          before: Math.min(...renders.map((r) => r.first)) - started,
          render: Math.max(...renders.map((r) => r.last)) - Math.min(...renders.map((r) => r.first)),
          after: ended - Math.max(...renders.map((r) => r.last)),
          probes: spans.filter((span) => span.kind === 'probe' || span.kind === 'packet-read').length,
          renders: renders.length,
        }
      : undefined;
  // The export's asset gets its pictures (poster, filmstrip, waveform) in the background after the answer:
  // waited for, untimed, so that they never run under the next timed render.
  if (watch) await picturesMade(api, projectId, answer.body.asset_id);
  return {
    answer: answer.body,
    ms: ended - started,
    cpuMs,
    childrenCpuMs,
    ...(phases ? { phases } : {}),
    ...(sound.length > 0 && {
      soundChainMs: Math.max(...sound.map((r) => r.last)) - Math.min(...sound.map((r) => r.first)),
    }),
  };
}

/** Waits until the asset's pictures are made (its metadata then says whether it has sound). */
async function picturesMade(api: Api, projectId: string, assetId: string): Promise<void> {
  for (const started = performance.now(); performance.now() - started < 60_000; await delay(50)) {
    const state = await api.state(projectId);
    const asset = state.body.assets.find((one) => one.id === assetId);
    if (asset && (asset.metadata as { has_sound?: boolean } | null)?.has_sound !== undefined) return;
  }
  throw new Error(`the pictures of ${assetId} were not made within 60 s`);
}

/** Medians of the phases of `runs` (each to ±20 ms, the polling interval). */
function phasesText(runs: Exported[]): string {
  const withPhases = runs.flatMap((run) => (run.phases ? [run.phases] : []));
  if (withPhases.length === 0) return 'phases not seen';
  const m = (pick: (p: NonNullable<Exported['phases']>) => number) => median(withPhases.map(pick));
  return (
    `phases (medians, ±20 ms): before the render ${s(m((p) => p.before))} s (staging copies + ` +
    `${m((p) => p.probes)} probe children, incl. the output's), render ${s(m((p) => p.render))} s ` +
    `(${m((p) => p.renders)} ffmpeg run${m((p) => p.renders) === 1 ? '' : 's'}), after ${s(m((p) => p.after))} s`
  );
}

async function loopLagMs(service: RunningService): Promise<number> {
  const answer = await fetch(`${service.url}/metrics`, {
    headers: { authorization: `Bearer ${service.adminToken}` },
  });
  return (sampleValue(await answer.text(), 'mf_nodejs_eventloop_lag_seconds') ?? 0) * 1000;
}

// ---- /healthz sampling ----

/**
 * The service's render children (as `watchChildren` classifies them), watched from a worker thread every 50 ms
 * so that the /proc scans (a few ms each) never run on the bench's own event loop while it times requests.
 * `stop` answers when each render was first seen (ms since the epoch, ±50 ms).
 */
function watchRendersOffThread(parentPid: number) {
  const worker = new Worker(
    `
    const { parentPort, workerData } = require('node:worker_threads');
    const { readdirSync, readFileSync } = require('node:fs');
    const firstSeen = new Map();
    const scan = () => {
      const at = performance.timeOrigin + performance.now();
      for (const name of readdirSync('/proc')) {
        if (!/^\\d+$/.test(name) || firstSeen.has(name)) continue;
        try {
          const stat = readFileSync('/proc/' + name + '/stat', 'utf8');
          if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== workerData.pid) continue;
          const argv = readFileSync('/proc/' + name + '/cmdline', 'utf8').split('\\0');
          if (argv.includes('-filter_complex') || argv.includes('-format_whitelist')) firstSeen.set(name, at);
        } catch {}
      }
    };
    const timer = setInterval(scan, 50);
    parentPort.on('message', () => {
      clearInterval(timer);
      parentPort.postMessage([...firstSeen.values()]);
    });
    `,
    { eval: true, workerData: { pid: parentPid } },
  );
  return {
    stop: () =>
      new Promise<number[]>((resolve) => {
        worker.once('message', (firsts: number[]) => {
          void worker.terminate();
          resolve(firsts.sort((x, y) => x - y));
        });
        worker.postMessage('stop');
      }),
  };
}

interface LatencyFigures {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

interface HealthFigures extends LatencyFigures {
  errors: number;
  serviceLoopP99: number;
  benchLoopP99: number;
  cpu: string;
  /** With `exports`: the requests sent before the last export's render started (staging), and after. */
  staging?: LatencyFigures;
  rendering?: LatencyFigures;
}

function latencyFigures(times: number[]): LatencyFigures {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted.length === 0
    ? { count: 0, p50: NaN, p99: NaN, max: NaN }
    : {
        count: sorted.length,
        p50: percentile(sorted, 0.5),
        p99: percentile(sorted, 0.99),
        max: sorted.at(-1)!,
      };
}

/**
 * GET /healthz every HEALTHZ_EVERY_MS (one request at a time, on one keep-alive connection) until `until`
 * settles; latency is from the request's start to its full body. With `exports` (how many renders `until`
 * runs), the requests are also split at the moment the last of those renders started.
 */
async function sampleHealthz(
  service: RunningService,
  until: Promise<unknown>,
  exports = 0,
): Promise<HealthFigures> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const url = new URL('/healthz', service.url);
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      const request = get(url, { agent }, (response) => {
        response.resume();
        response.on('end', () =>
          response.statusCode === 200
            ? resolve(performance.now() - started)
            : reject(new Error(`healthz ${response.statusCode}`)),
        );
      });
      request.on('error', reject);
    });
  await once(); // opens the connection
  const renders = exports > 0 ? watchRendersOffThread(service.proc.child.pid!) : undefined;
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  const benchLoop = monitorEventLoopDelay({ resolution: 10 });
  await loopLagMs(service); // resets the service's sampler
  benchLoop.enable();
  const cpuStart = machineTicks();
  const samples: { at: number; ms: number }[] = [];
  let errors = 0;
  while (!done) {
    const started = performance.now();
    try {
      samples.push({ at: performance.timeOrigin + started, ms: await once() });
    } catch {
      errors++;
    }
    const wait = HEALTHZ_EVERY_MS - (performance.now() - started);
    if (wait > 0) await delay(wait);
  }
  const cpu = machineCpu(cpuStart, machineTicks());
  benchLoop.disable();
  const serviceLoopP99 = await loopLagMs(service);
  agent.destroy();
  const firsts = (await renders?.stop()) ?? [];
  const split = firsts.length >= exports && exports > 0 ? firsts[exports - 1]! : undefined;
  return {
    ...latencyFigures(samples.map((sample) => sample.ms)),
    errors,
    serviceLoopP99,
    benchLoopP99: Math.max(0, benchLoop.percentile(99) / 1e6 - 10),
    cpu,
    ...(split !== undefined
      ? {
          staging: latencyFigures(samples.filter((x) => x.at < split).map((x) => x.ms)),
          rendering: latencyFigures(samples.filter((x) => x.at >= split).map((x) => x.ms)),
        }
      : {}),
  };
}

const latencyText = (f: LatencyFigures) =>
  `${f.count} requests: p50 ${f.p50.toFixed(2)} p99 ${f.p99.toFixed(2)} max ${f.max.toFixed(2)} ms`;

const healthText = (h: HealthFigures) =>
  `${h.count} requests (${h.errors} failed): p50 ${h.p50.toFixed(2)} p99 ${h.p99.toFixed(2)} max ` +
  `${h.max.toFixed(2)} ms; service event-loop delay p99 ${h.serviceLoopP99.toFixed(1)} ms, bench's ` +
  `${h.benchLoopP99.toFixed(1)} ms; machine CPU ${h.cpu}` +
  (h.staging && h.rendering
    ? `; split at the last render's start (±50 ms): while staging (copies, probes) ${latencyText(h.staging)}, ` +
      `after ${latencyText(h.rendering)}`
    : '');

// ---- main ----

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const s = (ms: number) => (ms / 1000).toFixed(2);
const list = (values: number[]) => values.map(s).join(', ');

async function main() {
  const started = performance.now();
  const loads = [load1()];
  const version = execFileSync(ffmpeg, ['-version'], { encoding: 'utf8' }).split('\n')[0]!;
  console.log(`export bench: ${version} (${ffmpeg}); ${availableParallelism()} cores; load1 ${loads[0]}`);
  const dir = mkdtempSync(join(tmpdir(), 'mf-export-bench-'));
  const workDir = mkdtempSync(join(tmpdir(), 'mf-export-bench-work-'));
  const mongo = await startMongo();
  let service: RunningService | undefined;
  try {
    await makeMedia(dir);
    const landscape = Array.from({ length: CLIPS }, (_, i) => `landscape${String(i).padStart(2, '0')}.mp4`);
    const portrait = Array.from({ length: CLIPS }, (_, i) => `portrait${String(i).padStart(2, '0')}.mp4`);
    console.log(
      `  sources: ${CLIPS} × landscape (${(await probe(join(dir, landscape[0]!))).text}), ${CLIPS} × portrait ` +
        `(${(await probe(join(dir, portrait[0]!))).text}), voice (${(await probe(join(dir, 'voice.wav'))).text}), ` +
        `music (${(await probe(join(dir, 'music.mp3'))).text})`,
    );
    /** The service under test, rendering whole or in segments. */
    const serve = (db: string, segments: boolean) =>
      startService({
        MONGO_URL: mongo.uri,
        MONGO_DB: db,
        FFMPEG_PATH: ffmpeg,
        AUDIT_SINK: 'file',
        RATE_LIMIT_PER_MINUTE: '1000000000',
        EXPORT_RATE_PER_MINUTE: '100000',
        EXPORT_CONCURRENCY: '2',
        EXPORT_WORK_DIR: workDir,
        LOG_LEVEL: 'warn',
        EXPORT_SEGMENTS: String(segments),
      });
    // The whole-timeline render: its rounds rename the project, which a segment cache would answer.
    service = await serve('bench_export', false);
    const running = service;
    const user = await editorUser(running, { credits: 1_000_000 });
    const api = editorClient(() => running, user.token);
    if (ONLY === undefined || ONLY === 'classic')
      await classicScenarios(api, running, dir, landscape, portrait, loads);
    if (ONLY === undefined || ONLY === 'effects') await effectsScenario(api, running, dir, landscape, loads);
    if (ONLY === undefined || ONLY === 'segments') {
      await service.stop();
      service = await serve('bench_export_segments', true);
      const segmenting = service;
      const owner = await editorUser(segmenting, { credits: 1_000_000 });
      await segmentsScenario(
        editorClient(() => segmenting, owner.token),
        segmenting,
        dir,
        landscape,
        loads,
      );
    }
    if (ONLY === undefined || ONLY === 'cluster') {
      await service.stop();
      service = undefined;
      await clusterScenario(dir, landscape, loads);
    }
    console.log(
      `  load average (1 min) at start, after setup and after each scenario: ${loads.join(' → ')}; whole ` +
        `benchmark ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
  } finally {
    await service?.stop();
    await mongo.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** Scenarios 1 to 4 (see the top of the file). */
async function classicScenarios(
  api: Api,
  running: RunningService,
  dir: string,
  landscape: string[],
  portrait: string[],
  loads: string[],
): Promise<void> {
  const reencodeProject = await timelineProject(api, dir, 'export bench 16:9 clips', landscape);
  const fastProject = await timelineProject(api, dir, 'export bench fast path', portrait);
  const blockedProject = await timelineProject(api, dir, 'export bench trimmed', portrait, {
    trim_start_sec: 0.001,
  });
  loads.push(load1());

  // 1. Service vs literal.
  const warmService = await exportOnce(api, running, reencodeProject);
  const warmLiteral = await runLiteral(dir);
  const serviceOut = await fetchOutput(running, warmService.answer.video_url, join(dir, 'service.mp4'));
  console.log(
    `  warm-up (untimed): service ${s(warmService.ms)} s → ${serviceOut}; literal ${s(warmLiteral.ms)} s → ` +
      `${(await probe(join(dir, 'literal.mp4'))).text}`,
  );
  const serviceRuns: Exported[] = [];
  const literalRuns: { ms: number; cpuMs: number }[] = [];
  const cpu1 = machineTicks();
  for (let round = 0; round < ROUNDS; round++) {
    serviceRuns.push(await exportOnce(api, running, reencodeProject));
    literalRuns.push(await runLiteral(dir));
  }
  const cpu1Text = machineCpu(cpu1, machineTicks());
  loads.push(load1());
  const outputSec = serviceRuns.at(-1)!.answer.duration_sec;
  const literalSec = (await probe(join(dir, 'literal.mp4'))).durationSec;
  const serviceMedian = median(serviceRuns.map((r) => r.ms));
  const literalMedian = median(literalRuns.map((r) => r.ms));
  const ratio = serviceMedian / literalMedian;
  const serviceCpu = median(serviceRuns.map((r) => r.cpuMs));
  const literalCpu = median(literalRuns.map((r) => r.cpuMs));
  const renderMedian = median(serviceRuns.flatMap((r) => (r.phases ? [r.phases.render] : [])));

  // 2. Fast path vs re-encoding the same timeline.
  const firstFast = await exportOnce(api, running, fastProject);
  const fastFile = join(dir, 'fast.mp4');
  const fastOut = await fetchOutput(running, firstFast.answer.video_url, fastFile);
  const sourceMd5 = await packetsMd5(join(dir, portrait[0]!), 30);
  const copied = (await packetsMd5(fastFile, 30)) === sourceMd5;
  const firstBlocked = await exportOnce(api, running, blockedProject);
  const blockedFile = join(dir, 'blocked.mp4');
  const blockedOut = await fetchOutput(running, firstBlocked.answer.video_url, blockedFile);
  const blockedCopied = (await packetsMd5(blockedFile, 30)) === sourceMd5;
  console.log(
    `  warm-up (untimed): fast path ${s(firstFast.ms)} s → ${fastOut}, picture copied: ${copied ? 'yes' : 'NO'}; ` +
      `re-encode ${s(firstBlocked.ms)} s → ${blockedOut}, picture copied: ${blockedCopied ? 'YES' : 'no'}`,
  );
  const fastRuns: Exported[] = [];
  const blockedRuns: Exported[] = [];
  const cpu2 = machineTicks();
  for (let round = 0; round < ROUNDS; round++) {
    fastRuns.push(await exportOnce(api, running, fastProject));
    blockedRuns.push(await exportOnce(api, running, blockedProject));
  }
  const cpu2Text = machineCpu(cpu2, machineTicks());
  loads.push(load1());
  const fastSec = fastRuns.at(-1)!.answer.duration_sec;
  const blockedSec = blockedRuns.at(-1)!.answer.duration_sec;
  const fastMedian = median(fastRuns.map((r) => r.ms));
  const blockedMedian = median(blockedRuns.map((r) => r.ms));
  const speedup = blockedMedian / fastMedian;
  const fastCpu = median(fastRuns.map((r) => r.cpuMs));
  const blockedCpu = median(blockedRuns.map((r) => r.cpuMs));

  // 4. /healthz without exports, during two at once, during one.
  const idle = await sampleHealthz(running, delay(HEALTHZ_BASELINE_MS));
  const servicePid = running.proc.child.pid!;
  const serviceCpuBefore = cpuMsOf(servicePid);
  // Each export renames its project first (a few ms), inside this span.
  const twoStarted = performance.now();
  const two = Promise.all([
    exportOnce(api, running, reencodeProject, false),
    exportOnce(api, running, blockedProject, false),
  ]);
  const duringTwo = await sampleHealthz(running, two, 2);
  const twoMs = performance.now() - twoStarted;
  const twoAnswers = await two;
  const serviceCpuTwo = cpuMsOf(servicePid) - serviceCpuBefore;
  loads.push(load1());
  const one = exportOnce(api, running, reencodeProject, false);
  const duringOne = await sampleHealthz(running, one, 1);
  const oneAnswer = await one;
  loads.push(load1());

  // ---- report ----
  const speed = (sec: number, ms: number) => (sec / (ms / 1000)).toFixed(2);
  console.log(`export (service from dist/, EXPORT_CONCURRENCY=2, ffmpeg nice ${NICENESS} on both sides):`);
  console.log(
    `  1. service vs literal ffmpeg (${CLIPS} × ${CLIP_SEC} s 1280x720 30 fps clips → 9:16 720x1280 fit, ` +
      `scale+pad re-encode; voice ${VOICE_SEC} s at ${VOICE_START_SEC} s, music ${MUSIC_SEC} s, ducking, ` +
      `loudnorm; ${ROUNDS} rounds alternating): service median ${s(serviceMedian)} s ` +
      `[${list(serviceRuns.map((r) => r.ms))}], literal median ${s(literalMedian)} s ` +
      `[${list(literalRuns.map((r) => r.ms))}]; ratio ${ratio.toFixed(3)}× ` +
      `[budget <= ${SERVICE_BUDGET}×: ` +
      `${verdict(ratio <= SERVICE_BUDGET, `service <= ${SERVICE_BUDGET}× literal ffmpeg`, `${ratio.toFixed(3)}×`)}]; machine CPU ${cpu1Text}`,
  );
  console.log(
    `     CPU time (medians; not judged, robust to other load): service ${s(serviceCpu)} s (its process + ` +
      `every child), literal ${s(literalCpu)} s, ratio ${(serviceCpu / literalCpu).toFixed(3)}×; service ` +
      `${phasesText(serviceRuns)}; service render alone vs literal: ${(renderMedian / literalMedian).toFixed(3)}×`,
  );
  console.log(
    `  2. fast path vs re-encode of the same timeline (${CLIPS} × ${CLIP_SEC} s 720x1280 30 fps h264 yuv420p ` +
      `+ AAC, voice, music; re-encode forced by trim_start_sec 0.001 on clip 0; ${ROUNDS} rounds alternating): ` +
      `fast path median ${s(fastMedian)} s [${list(fastRuns.map((r) => r.ms))}], re-encode median ` +
      `${s(blockedMedian)} s [${list(blockedRuns.map((r) => r.ms))}]; ${speedup.toFixed(2)}× faster ` +
      `[budget >= ${FAST_PATH_BUDGET}×: ` +
      `${verdict(speedup >= FAST_PATH_BUDGET && copied && !blockedCopied, `fast path >= ${FAST_PATH_BUDGET}× re-encode, picture copied`, `${speedup.toFixed(2)}×, copied ${copied}, re-encode copied ${blockedCopied}`)}]` +
      `${copied ? '' : ' (the fast path did NOT copy the picture)'}; machine CPU ${cpu2Text}`,
  );
  console.log(
    `     CPU time (medians, not judged): fast path ${s(fastCpu)} s, re-encode ${s(blockedCpu)} s, ` +
      `${(blockedCpu / fastCpu).toFixed(2)}×; fast path ${phasesText(fastRuns)}; re-encode ` +
      `${phasesText(blockedRuns)}`,
  );
  console.log(
    `  3. export speed (output s per wall s, medians): 16:9 clips re-encoded: service ` +
      `${speed(outputSec, serviceMedian)}, literal ${speed(literalSec, literalMedian)}; fast path ` +
      `${speed(fastSec, fastMedian)}; the same timeline re-encoded ${speed(blockedSec, blockedMedian)} ` +
      `(outputs ${outputSec} / ${literalSec.toFixed(3)} / ${fastSec} / ${blockedSec} s)`,
  );
  console.log(
    `  4. GET /healthz every ${HEALTHZ_EVERY_MS} ms, sequential, one keep-alive connection (includes its ` +
      `MongoDB ping):`,
  );
  console.log(`     no export: ${healthText(idle)}`);
  console.log(
    `     two re-encode exports at once (${s(twoMs)} s; ` +
      `${twoAnswers.map((a) => `${a.answer.duration_sec} s in ${s(a.ms)} s`).join(', ')}; service process ` +
      `CPU ${((serviceCpuTwo / twoMs) * 100).toFixed(1)} % of a core): ${healthText(duringTwo)} ` +
      `[budget p99 <= ${HEALTHZ_P99_MS} ms: ` +
      `${verdict(duringTwo.p99 <= HEALTHZ_P99_MS && duringTwo.errors === 0, `/healthz p99 <= ${HEALTHZ_P99_MS} ms during two exports`, `${duringTwo.p99} ms, ${duringTwo.errors} errors`)}]`,
  );
  console.log(
    `     one re-encode export (${oneAnswer.answer.duration_sec} s in ${s(oneAnswer.ms)} s): ` +
      `${healthText(duringOne)} [p99 <= ${HEALTHZ_P99_MS} ms: ` +
      `${verdict(duringOne.p99 <= HEALTHZ_P99_MS && duringOne.errors === 0, `/healthz p99 <= ${HEALTHZ_P99_MS} ms during one export`, `${duringOne.p99} ms, ${duringOne.errors} errors`)}]`,
  );
}

/**
 * Scenario 5: the effects timeline through the service, `final` against the literal command and against
 * `preview`.
 */
async function effectsScenario(
  api: Api,
  running: RunningService,
  dir: string,
  landscape: string[],
  loads: string[],
): Promise<void> {
  const project = await api.createProject({ name: 'export bench effects', aspect_ratio: '9:16' });
  const add = async (body: Record<string, unknown>) => {
    const answer = await api.addClip(project.id, body);
    if (answer.status !== 200 && answer.status !== 201)
      throw new Error(`add clip: ${answer.status} ${JSON.stringify(answer.body)}`);
  };
  const upload = async (file: string, type: string) => {
    const answer = await api.upload(project.id, readFileSync(join(dir, file)), type);
    if (answer.status !== 200 && answer.status !== 201)
      throw new Error(`upload ${file}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body.asset.id;
  };
  for (const [i, file] of landscape.entries()) {
    const transition =
      i === 0
        ? {}
        : {
            transition_in: {
              type: TRANSITION_TYPES[i % TRANSITION_TYPES.length],
              duration_sec: TRANSITION_SEC,
            },
          };
    await add({ track: 'video', asset_id: await upload(file, 'video/mp4'), ...transition });
  }
  await add({ track: 'text', text: TITLE, style: 'title', start_sec: 1, duration_sec: 3 });
  await add({
    track: 'music',
    asset_id: await upload('music.mp3', 'audio/mpeg'),
    start_sec: 0,
    volume: MUSIC_VOLUME,
  });
  writeFileSync(join(dir, 'title.txt'), TITLE);
  const font = join(
    dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')),
    'ttf',
    'DejaVuSans.ttf',
  );
  const literalArgs = effectsLiteralArgs(font);
  loads.push(load1());

  const final = { quality: 'final' };
  const preview = { quality: 'preview' };
  const warmFinal = await exportOnce(api, running, project.id, true, final);
  const warmPreview = await exportOnce(api, running, project.id, true, preview);
  const warmLiteral = await runLiteral(dir, literalArgs);
  console.log(
    `  warm-up (untimed): effects final ${s(warmFinal.ms)} s → ` +
      `${await fetchOutput(running, warmFinal.answer.video_url, join(dir, 'effects-final.mp4'))}; preview ` +
      `${s(warmPreview.ms)} s → ${await fetchOutput(running, warmPreview.answer.video_url, join(dir, 'effects-preview.mp4'))}; ` +
      `literal ${s(warmLiteral.ms)} s → ${(await probe(join(dir, 'effects-literal.mp4'))).text}`,
  );
  const finals: Exported[] = [];
  const previews: Exported[] = [];
  const literals: { ms: number; cpuMs: number }[] = [];
  const cpu = machineTicks();
  for (let round = 0; round < ROUNDS; round++) {
    finals.push(await exportOnce(api, running, project.id, true, final));
    literals.push(await runLiteral(dir, literalArgs));
    previews.push(await exportOnce(api, running, project.id, true, preview));
  }
  const cpuText = machineCpu(cpu, machineTicks());
  loads.push(load1());
  const finalMedian = median(finals.map((r) => r.ms));
  const previewMedian = median(previews.map((r) => r.ms));
  const literalMedian = median(literals.map((r) => r.ms));
  const ratio = finalMedian / literalMedian;
  const faster = finalMedian / previewMedian;
  console.log(
    `  5. effects (${CLIPS} × ${CLIP_SEC} s 1280x720 clips → 9:16 fit, a ${TRANSITION_SEC} s transition on every ` +
      `cut, a title 1–4 s, music; ${finals.at(-1)!.answer.duration_sec} s; ${ROUNDS} rounds alternating): ` +
      `final median ${s(finalMedian)} s [${list(finals.map((r) => r.ms))}], literal median ${s(literalMedian)} s ` +
      `[${list(literals.map((r) => r.ms))}]; ratio ${ratio.toFixed(3)}× [budget <= ${SERVICE_BUDGET}×: ` +
      `${verdict(ratio <= SERVICE_BUDGET, `effects final <= ${SERVICE_BUDGET}× literal ffmpeg`, `${ratio.toFixed(3)}×`)}]; ` +
      `preview median ${s(previewMedian)} s [${list(previews.map((r) => r.ms))}], ${faster.toFixed(2)}× faster ` +
      `than final [budget >= ${PREVIEW_BUDGET}×: ` +
      `${verdict(faster >= PREVIEW_BUDGET, `preview >= ${PREVIEW_BUDGET}× faster than final`, `${faster.toFixed(2)}×`)}]; machine CPU ${cpuText}`,
  );
  console.log(
    `     CPU time (medians, not judged): final ${s(cpuMedian(finals))} s, literal ${s(cpuMedian(literals))} s, ` +
      `preview ${s(cpuMedian(previews))} s; final ${phasesText(finals)}; preview ${phasesText(previews)}`,
  );
}

/** Downloads an export's file (its `video_url`) to `path` and describes it. */

const cpuMedian = (runs: { cpuMs: number }[]) => median(runs.map((r) => r.cpuMs));

/** Scenario 6: segments, cold against the literal command, and again after one clip changed. */
async function segmentsScenario(
  api: Api,
  running: RunningService,
  dir: string,
  landscape: string[],
  loads: string[],
): Promise<void> {
  type Changed = Exported & { encoded: number; reused: number; soundReused: boolean };
  const colds: Exported[] = [];
  const literals: { ms: number; cpuMs: number }[] = [];
  const trims: Changed[] = [];
  const titles: Changed[] = [];
  /** Exports `projectId` again after `change`, with the segments it encoded and reused and its sound. */
  const again = async (projectId: string, change: () => Promise<ApiAnswer<unknown>>): Promise<Changed> => {
    const changed = await change();
    if (changed.status !== 200) throw new Error(`change: ${changed.status} ${JSON.stringify(changed.body)}`);
    const before = await segmentCounters(running);
    const run = await exportOnce(api, running, projectId);
    const after = await segmentCounters(running);
    return {
      ...run,
      encoded: after.encoded - before.encoded,
      reused: after.reused - before.reused,
      soundReused: after.soundsReused > before.soundsReused,
    };
  };
  // Round 0 is the warm-up (untimed).
  for (let round = 0; round <= ROUNDS; round++) {
    const projectId = await timelineProject(api, dir, `export bench segments ${round}`, landscape);
    const cold = await exportOnce(api, running, projectId);
    const literal = await runLiteral(dir);
    const clip = (await api.state(projectId)).body.clips
      .filter((one) => one.track === 'video')
      .sort((a, b) => a.idx - b.idx)[CHANGED_CLIP]!;
    const trim = await again(projectId, () =>
      api.patchClip(projectId, clip.id, { duration_sec: CHANGED_DURATION_SEC }),
    );
    const title = await again(projectId, () =>
      api.addClip(projectId, { track: 'text', text: TITLE, start_sec: 16, duration_sec: 3 }),
    );
    if (round === 0) {
      const out = await fetchOutput(running, title.answer.video_url, join(dir, 'segments.mp4'));
      console.log(
        `  warm-up (untimed): segments cold ${s(cold.ms)} s, literal ${s(literal.ms)} s, after the trim ` +
          `${s(trim.ms)} s (${trim.encoded} encoded, ${trim.reused} reused), after the title ${s(title.ms)} s ` +
          `(${title.encoded} encoded, ${title.reused} reused, sound reused ${title.soundReused}) → ${out}`,
      );
      continue;
    }
    colds.push(cold);
    literals.push(literal);
    trims.push(trim);
    titles.push(title);
  }
  loads.push(load1());
  const coldMedian = median(colds.map((r) => r.ms));
  const literalMedian = median(literals.map((r) => r.ms));
  const ratio = coldMedian / literalMedian;
  console.log(
    `  6. segments (EXPORT_SEGMENTS=true; the timeline of 1, a new project each round; ${ROUNDS} rounds): ` +
      `cold median ${s(coldMedian)} s [${list(colds.map((r) => r.ms))}], literal median ` +
      `${s(literalMedian)} s [${list(literals.map((r) => r.ms))}]; ratio ${ratio.toFixed(3)}× [budget <= ` +
      `${SEGMENTS_BUDGET}×: ${verdict(ratio <= SEGMENTS_BUDGET, `segments cold <= ${SEGMENTS_BUDGET}× literal ffmpeg`, `${ratio.toFixed(3)}×`)}]`,
  );
  const changeText = (what: string, runs: Changed[], sound: boolean) => {
    // Each round's change against its own cold export.
    const share = median(runs.map((r, i) => r.ms / colds[i]!.ms));
    const expected = runs.every((r) => r.encoded >= 1 && r.encoded <= 2 && r.soundReused === sound);
    return (
      `     after ${what}: median ${s(median(runs.map((r) => r.ms)))} s [${list(runs.map((r) => r.ms))}], ` +
      `${(share * 100).toFixed(1)} % of the cold export (median of the rounds' shares) [budget <= ` +
      `${REEXPORT_BUDGET * 100} %: ${verdict(share <= REEXPORT_BUDGET && expected, `re-export after ${what} <= ${REEXPORT_BUDGET * 100} % of the full export`, `${(share * 100).toFixed(1)} %, encoded ${runs.map((r) => r.encoded).join('/')}`)}]; ` +
      `segments encoded/reused per round ${runs.map((r) => `${r.encoded}/${r.reused}`).join(', ')}, sound ` +
      `${sound ? 'reused' : 'mixed again'}; CPU median ${s(cpuMedian(runs))} s; ${phasesText(runs)}`
    );
  };
  console.log(
    changeText(`clip ${CHANGED_CLIP} trimmed to ${CHANGED_DURATION_SEC} s (the sound changes)`, trims, false),
  );
  // What this machine allows a trim at best: its children's work spread perfectly over the cores, and the sound
  // (measured and mixed, then encoded: one AAC stream) one step after the other.
  const cores = availableParallelism();
  const childrenCpu = median(trims.map((r) => r.childrenCpuMs));
  const floorShare = median(trims.map((r, i) => r.childrenCpuMs / cores / colds[i]!.ms));
  console.log(
    `     what bounds the trim on this machine: its children's CPU ${s(childrenCpu)} s (the service's own ` +
      `${s(median(trims.map((r) => r.cpuMs - r.childrenCpuMs)))} s) over ${cores} cores is ` +
      `${s(childrenCpu / cores)} s, ${(floorShare * 100).toFixed(1)} % of the cold export before any copy, ` +
      `probe or join; the sound chain (mixdown, then its encoder) takes ` +
      `${s(median(trims.map((r) => r.soundChainMs ?? NaN)))} s, one step after the other`,
  );
  console.log(changeText('a title added over 16-19 s (the picture alone changes)', titles, true));
  console.log(
    `     CPU time (medians, not judged): cold ${s(cpuMedian(colds))} s, literal ${s(cpuMedian(literals))} s; ` +
      `cold ${phasesText(colds)}`,
  );
}

/** One cluster size's export: wall time, CPU of every process of the cluster, segments encoded per node. */
interface ClusterExport {
  ms: number;
  cpuMs: number;
  /** The CPU split by kind of process: service nodes with their children, nats-server, the database (ms). */
  cpuBy: { nodes: number; nats: number; mongo: number };
  outputSec: number;
  encodedBy: number[];
}

/** Scenario 7: one export's segments over a cluster of 1 node and of 3. */
async function clusterScenario(dir: string, landscape: string[], loads: string[]): Promise<void> {
  const sizes: { nodes: number; runs: ClusterExport[] }[] = [];
  for (const nodes of [1, 3]) {
    const cluster = await startLocalCluster({
      nodes,
      env: {
        FFMPEG_PATH: ffmpeg,
        EXPORT_SEGMENTS: 'true',
        EXPORT_CONCURRENCY: '2',
        RATE_LIMIT_PER_MINUTE: '1000000000',
        EXPORT_RATE_PER_MINUTE: '100000',
        LOG_LEVEL: 'warn',
      },
    });
    try {
      const entry = { url: cluster.nodes[0]!.url, adminToken: cluster.adminToken };
      const owner = await editorUser(entry, { credits: 1_000_000 });
      const api = editorClient(() => entry, owner.token);
      const runs: ClusterExport[] = [];
      for (let round = 0; round <= ROUNDS; round++) {
        const projectId = await timelineProject(api, dir, `cluster bench ${nodes} ${round}`, landscape);
        const pids = Object.entries(cluster.pids());
        const cpuOf = (prefix: string) =>
          pids.reduce((sum, [name, pid]) => (name.startsWith(prefix) ? sum + cpuMsOf(pid, true) : sum), 0);
        const cpu = () => ({ nodes: cpuOf('node'), nats: cpuOf('nats'), mongo: cpuOf('mongo') });
        const counts = () =>
          Promise.all(
            cluster.nodes.map((node) => segmentCounters({ ...node, adminToken: cluster.adminToken })),
          );
        const [cpuBefore, before] = [cpu(), await counts()];
        const started = performance.now();
        const answer = await api.exportVideo(projectId);
        const ms = performance.now() - started;
        if (answer.status !== 200) throw new Error(`export: ${answer.status} ${JSON.stringify(answer.body)}`);
        const cpuAfter = cpu();
        const cpuBy = {
          nodes: cpuAfter.nodes - cpuBefore.nodes,
          nats: cpuAfter.nats - cpuBefore.nats,
          mongo: cpuAfter.mongo - cpuBefore.mongo,
        };
        const cpuMs = cpuBy.nodes + cpuBy.nats + cpuBy.mongo;
        const after = await counts();
        await picturesMade(api, projectId, answer.body.asset_id);
        const encodedBy = after.map((count, i) => count.encoded - before[i]!.encoded);
        const run = { ms, cpuMs, cpuBy, outputSec: answer.body.duration_sec, encodedBy };
        if (round === 0)
          console.log(
            `  warm-up (untimed): ${nodes} node(s) ${s(ms)} s, segments encoded per node ${encodedBy.join('/')}`,
          );
        else runs.push(run);
      }
      sizes.push({ nodes, runs });
    } finally {
      await cluster.down();
    }
  }
  loads.push(load1());
  const perOutput = (runs: ClusterExport[]) => median(runs.map((r) => r.cpuMs / 1000 / r.outputSec));
  const [one, three] = sizes as [(typeof sizes)[0], (typeof sizes)[0]];
  const ratio = perOutput(three.runs) / perOutput(one.runs);
  const shares = (runs: ClusterExport[]) =>
    runs
      .map((r) => {
        const total = r.encodedBy.reduce((sum, n) => sum + n, 0);
        return r.encodedBy.map((n) => `${((n / Math.max(1, total)) * 100).toFixed(0)} %`).join('/');
      })
      .join(', ');
  const spread = three.runs.every((r) => r.encodedBy.filter((n) => n > 0).length >= 2);
  console.log(
    `  7. cluster (local cluster, EXPORT_SEGMENTS=true, the timeline of 1 through node-1, ${ROUNDS} rounds): ` +
      `CPU s per output s 1 node ${perOutput(one.runs).toFixed(3)}, 3 nodes ${perOutput(three.runs).toFixed(3)}; ` +
      `ratio ${ratio.toFixed(3)}× [budget <= ${CLUSTER_CPU_BUDGET}×: ${verdict(ratio <= CLUSTER_CPU_BUDGET && spread, `3 nodes' CPU per output second <= +15 % of 1 node's, segments on >= 2 nodes`, `${ratio.toFixed(3)}×, spread ${spread}`)}]`,
  );
  console.log(
    `     wall (not judged; one machine of ${availableParallelism()} cores under all of them): 1 node median ` +
      `${s(median(one.runs.map((r) => r.ms)))} s [${list(one.runs.map((r) => r.ms))}], 3 nodes median ` +
      `${s(median(three.runs.map((r) => r.ms)))} s [${list(three.runs.map((r) => r.ms))}]; segments encoded ` +
      `per node (node-1/2/3) per round: ${shares(three.runs)}`,
  );
  const split = (runs: ClusterExport[]) =>
    (['nodes', 'nats', 'mongo'] as const)
      .map((kind) => `${kind} ${s(median(runs.map((r) => r.cpuBy[kind])))} s`)
      .join(', ');
  console.log(
    `     CPU by process (medians, not judged): 1 node: ${split(one.runs)}; 3 nodes: ${split(three.runs)} ` +
      `(nodes with their ffmpeg children)`,
  );
}

async function fetchOutput(service: RunningService, videoUrl: string, path: string): Promise<string> {
  const url = new URL(videoUrl, service.url);
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status}`);
  const { writeFile } = await import('node:fs/promises');
  await writeFile(path, Buffer.from(await response.arrayBuffer()));
  return (await probe(path)).text;
}

await main();
