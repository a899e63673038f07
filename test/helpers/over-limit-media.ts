// Media past the limits of docs/editor.md "Media limits", made at test time and cheaply: the PNG bomb a probe
// found (15 000 × 15 000 grey pixels in ~219 KB), and tiny H.264 files that are too wide, too fast, too
// long, or whose one frame is larger than their container says.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crc32, deflateSync } from 'node:zlib';
import { resolveFfmpeg } from '../../src/platform/media/ffmpeg-path.ts';

const run = promisify(execFile);

/**
 * A valid PNG of `side` × `side` black 8-bit grey pixels: every row a filter byte and zeros, deflated at level
 * 9 (about 1 000 : 1, the most deflate gives). 15 000 × 15 000 is 218 780 bytes, made in ~3 s; decoding it
 * takes 225 MB and seconds.
 */
export function pngBomb(side = 15_000): Buffer {
  const rows = Buffer.alloc((side + 1) * side);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  header[8] = 8; // bit depth; colour type 0 (grey), deflate, filter 0, no interlace follow as zeros
  return Buffer.concat([
    Buffer.from('89504e470d0a1a0a', 'hex'),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(rows, { level: 9 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** Paths of the over-limit videos `makeOverLimitVideos` wrote. */
export interface OverLimitVideos {
  /** 4097 × 64, two frames. */
  wide: string;
  /** 121 frames in one second, 64 × 64. */
  fast: string;
  /** Two seconds of 64 × 64 frames stretched to 3920.04 s (timestamps × 2000: no frame added). */
  long: string;
  /** One 4100 × 4100 frame (16 810 000 pixels, more than 4096², the largest video frame a probe decodes). */
  largeFrame: string;
  /** `largeFrame` with its sample description rewritten to say 64 × 64. */
  understated: string;
}

/** Writes the over-limit videos into `dir` with the resolved ffmpeg (~2 s of CPU in all). */
export async function makeOverLimitVideos(dir: string): Promise<OverLimitVideos> {
  const { ffmpeg } = resolveFfmpeg({ ffmpegPath: process.env.FFMPEG_PATH });
  const make = (...args: string[]) => run(ffmpeg, ['-hide_banner', '-nostdin', '-v', 'error', '-y', ...args]);
  const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast'];
  const path = (name: string) => join(dir, name);
  const videos: OverLimitVideos = {
    wide: path('wide.mp4'),
    fast: path('fast.mp4'),
    long: path('long.mp4'),
    largeFrame: path('large-frame.mp4'),
    understated: path('understated.mp4'),
  };
  const short = path('two-seconds.mp4');
  await Promise.all([
    // The colour source stops at 4096 wide: the scaler makes the odd side, which 4:4:4 allows.
    make(
      ...['-f', 'lavfi', '-i', 'color=c=blue:s=256x64:r=25', '-frames:v', '2', '-vf', 'scale=4097:64'],
      ...[...x264, '-pix_fmt', 'yuv444p', videos.wide],
    ),
    // Passthrough keeps the source's timestamps, so the average rate is exactly 121 (not 120.008).
    make(
      ...['-f', 'lavfi', '-i', 'testsrc2=size=64x64:rate=121', '-frames:v', '121'],
      ...[...x264, '-pix_fmt', 'yuv420p', '-fps_mode', 'passthrough', videos.fast],
    ),
    make(
      ...['-f', 'lavfi', '-i', 'testsrc2=size=64x64:rate=25', '-frames:v', '50'],
      ...[...x264, '-pix_fmt', 'yuv420p', short],
    ),
    make(
      ...['-f', 'lavfi', '-i', 'color=c=blue:s=512x512', '-frames:v', '1', '-vf', 'scale=4100:4100'],
      ...[...x264, '-pix_fmt', 'yuv420p', videos.largeFrame],
    ),
  ]);
  await make('-itsscale', '2000', '-i', short, '-c', 'copy', videos.long);
  await writeFile(videos.understated, understate(await readFile(videos.largeFrame), 64, 64));
  return videos;
}

/** The mp4 `file` with the width and height of its avc1 sample entry (what the container declares) replaced. */
function understate(file: Buffer, width: number, height: number): Buffer {
  const copy = Buffer.from(file);
  const entry = copy.indexOf('avc1', copy.indexOf('stsd'));
  if (entry < 0) throw new Error('no avc1 sample entry');
  // After the type: 6 reserved bytes, the data reference index (2), 16 bytes of pre-defined and reserved fields.
  const sides = entry + 4 + 6 + 2 + 16;
  copy.writeUInt16BE(width, sides);
  copy.writeUInt16BE(height, sides + 2);
  return copy;
}
