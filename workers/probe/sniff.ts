// User media is hostile input (docs/architecture.md, Dependencies): ffmpeg's own format detection would
// happily open an HLS or concat playlist named `.mp4` and fetch internal URLs or read local files. So the
// container is decided here, from a few magic bytes, and ffprobe/ffmpeg are then forced onto that one
// demuxer; anything this does not recognise is refused before a child process ever sees it.

/** How many leading bytes `sniffContainer` needs to decide. */
export const SNIFF_BYTES = 64;

/** Each container we accept and the one ffmpeg demuxer forced on it. */
export const CONTAINER_DEMUXERS = {
  png: 'png_pipe',
  jpeg: 'jpeg_pipe',
  webp: 'webp_pipe',
  wav: 'wav',
  mov: 'mov',
  mp3: 'mp3',
  aac: 'aac',
} as const;

export type MediaContainer = keyof typeof CONTAINER_DEMUXERS;
export type MediaDemuxer = (typeof CONTAINER_DEMUXERS)[MediaContainer];

/** What the magic bytes claim: the container and the ffmpeg demuxer to force. */
export interface SniffedContainer {
  container: MediaContainer;
  demuxer: MediaDemuxer;
}

// Box types that may open a QuickTime file written before `ftyp` existed (QuickTime File Format, 2001).
const LEGACY_QUICKTIME_BOXES = new Set(['moov', 'mdat', 'free', 'wide', 'skip', 'pnot']);

/** The container `bytes` (the first `SNIFF_BYTES` of a file, or all of a shorter one) claim to be, or null. */
export function sniffContainer(bytes: Uint8Array): SniffedContainer | null {
  const container = containerOf(bytes);
  return container && { container, demuxer: CONTAINER_DEMUXERS[container] };
}

function containerOf(bytes: Uint8Array): MediaContainer | null {
  const at = (offset: number, signature: readonly number[]) =>
    bytes.length >= offset + signature.length && signature.every((byte, i) => bytes[offset + i] === byte);
  const ascii = (offset: number, text: string) =>
    at(
      offset,
      [...text].map((char) => char.charCodeAt(0)),
    );

  if (at(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (at(0, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (ascii(0, 'RIFF') && ascii(8, 'WEBP')) return 'webp';
  if (ascii(0, 'RIFF') && ascii(8, 'WAVE')) return 'wav';
  if (ascii(4, 'ftyp')) return 'mov';
  if (bytes.length >= 8 && LEGACY_QUICKTIME_BOXES.has(latin1(bytes, 4, 8)) && plausibleBoxSize(bytes)) {
    return 'mov';
  }
  if (ascii(0, 'ID3')) return 'mp3';
  if (bytes.length >= 2 && bytes[0] === 0xff) {
    const second = bytes[1]!;
    if (isMpegAudioLayer3(second)) return 'mp3';
    if (isAdts(second)) return 'aac';
  }
  return null;
}

/** MPEG audio frame header, second byte: 3 more sync bits, a version that is not the reserved one, layer III. */
function isMpegAudioLayer3(byte: number): boolean {
  const sync = (byte & 0xe0) === 0xe0;
  const version = (byte >> 3) & 0b11; // 0b01 is reserved
  const layer = (byte >> 1) & 0b11; // 0b01 is layer III
  return sync && version !== 0b01 && layer === 0b01;
}

/** ADTS header, second byte: 4 more sync bits and layer 0 (`FF F1`, `FF F9`, or `FF F0`/`FF F8` with CRC). */
function isAdts(byte: number): boolean {
  return (byte & 0xf6) === 0xf0;
}

/** A legacy first box is at least its own 8-byte header (0 = "to the end of the file", 1 = 64-bit size). */
function plausibleBoxSize(bytes: Uint8Array): boolean {
  const size = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
  return size === 0 || size === 1 || size >= 8;
}

function latin1(bytes: Uint8Array, start: number, end: number): string {
  return String.fromCharCode(...bytes.subarray(start, end));
}
