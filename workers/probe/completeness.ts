import { open, type FileHandle } from 'node:fs/promises';
import type { MediaContainer } from './sniff.ts';

// ffprobe reads headers, not whole files: an mp4 cut in half with its `moov` first, a wav or png cut short,
// all probe as fine (with a duration computed from what is left, or the declared one). Each container says
// how long it is, though, so a truncated file is one whose declared extent runs past its end. These checks
// read a few headers (tens of bytes per box or chunk), never the media data.

/**
 * `complete`: the declared sizes fit the file. `truncated`: they run past its end. `unknown`: the container
 * does not say (an mp4 box of size 0 = "to the end of the file", a wav written to a pipe); the caller then
 * reads the packets to find out, where that can tell.
 */
export type MediaCompleteness = 'complete' | 'truncated' | 'unknown';

/** Beyond this many top-level boxes or chunks, the walk gives up (a crafted file of millions of tiny boxes). */
const MAX_ENTRIES = 100_000;
/** The tail searched for PNG's end chunk (tools may append a little after it). */
const PNG_TAIL_BYTES = 64 * 1024;
/** The whole IEND chunk: length 0, type, and its fixed CRC. */
const PNG_IEND = Buffer.from('0000000049454e44ae426082', 'hex');
/** A wav data size meaning "unknown": what streaming writers leave when they cannot seek back. */
const WAV_UNKNOWN_SIZES = new Set([0, 0xffffffff]);

/** Whether the file at `path` is as long as its container (sniffed as `container`) says. */
export async function checkCompleteness(path: string, container: MediaContainer): Promise<MediaCompleteness> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    switch (container) {
      case 'mov':
        return await walkBoxes(file, size);
      case 'wav':
        return await walkWav(file, size);
      case 'webp':
        return await riffFits(file, size);
      case 'png':
        return await hasPngEnd(file, size);
      default:
        // JPEG, MP3 and ADTS declare no total length; a cut one loses its last lines or frames.
        return 'complete';
    }
  } finally {
    await file.close();
  }
}

async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await file.read(buffer, 0, length, position);
  return buffer.subarray(0, bytesRead);
}

/** ISO BMFF / QuickTime: the top-level boxes must tile the file (`ftyp moov mdat`, `mdat moov`, fragments). */
async function walkBoxes(file: FileHandle, size: number): Promise<MediaCompleteness> {
  let offset = 0;
  for (let entries = 0; entries < MAX_ENTRIES; entries++) {
    const left = size - offset;
    // A few stray bytes after the last box are padding some writers leave; nothing is missing.
    if (left < 8) return 'complete';
    const header = await readAt(file, offset, 16);
    const size32 = header.readUInt32BE(0);
    let boxSize: number;
    if (size32 === 0) return 'unknown';
    if (size32 === 1) {
      if (header.length < 16) return 'truncated';
      const size64 = header.readBigUInt64BE(8);
      if (size64 > BigInt(Number.MAX_SAFE_INTEGER)) return 'truncated';
      boxSize = Number(size64);
      if (boxSize < 16) return 'unknown';
    } else {
      if (size32 < 8) return 'unknown';
      boxSize = size32;
    }
    if (boxSize > left) return 'truncated';
    offset += boxSize;
  }
  return 'unknown';
}

/** RIFF: the declared RIFF size must fit (WebP writers always fill it in). */
async function riffFits(file: FileHandle, size: number): Promise<MediaCompleteness> {
  const header = await readAt(file, 0, 12);
  if (header.length < 12) return 'truncated';
  return 8 + header.readUInt32LE(4) <= size ? 'complete' : 'truncated';
}

/** WAV: the chunks up to `data` must fit, and `data` itself unless its size was left unknown. */
async function walkWav(file: FileHandle, size: number): Promise<MediaCompleteness> {
  let offset = 12;
  for (let entries = 0; entries < MAX_ENTRIES; entries++) {
    const header = await readAt(file, offset, 8);
    if (header.length < 8) return 'truncated'; // no data chunk at all
    const id = header.toString('latin1', 0, 4);
    // A chunk id is four printable characters: anything else is not a wav (zeros would read as empty chunks,
    // 8 bytes at a time, all the way down a large file).
    if (!/^[\x20-\x7e]{4}$/.test(id)) return 'truncated';
    const chunkSize = header.readUInt32LE(4);
    const isData = id === 'data';
    if (isData && WAV_UNKNOWN_SIZES.has(chunkSize)) return 'unknown';
    const end = offset + 8 + chunkSize;
    if (end > size) return 'truncated';
    if (isData) return 'complete';
    offset = end + (chunkSize % 2); // chunks are padded to an even length
  }
  return 'unknown';
}

/** PNG: the IEND chunk, which ends every PNG, is there. */
async function hasPngEnd(file: FileHandle, size: number): Promise<MediaCompleteness> {
  const start = Math.max(0, size - PNG_TAIL_BYTES);
  const tail = await readAt(file, start, size - start);
  return tail.includes(PNG_IEND) ? 'complete' : 'truncated';
}
