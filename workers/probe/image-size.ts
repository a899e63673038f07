import { sniffImageType } from './image-type.ts';

// The size of an image, read from its header bytes (docs/editor.md "Media limits"): a decoder allocates its
// picture from these same fields, so a 15 000 × 15 000 PNG of 219 KB is refused from its first 24 bytes,
// before anything inflates a gigabyte of pixels.

/**
 * What the first bytes of an image say about its size: `size`; `need` when the header goes on past the bytes
 * given (retry with at least `bytes` of them; a file shorter than that has a truncated header); `invalid`
 * when the bytes are no PNG, JPEG, WebP or GIF header this reader understands.
 */
export type ImageSize =
  | { status: 'size'; width: number; height: number }
  | { status: 'need'; bytes: number }
  | { status: 'invalid' };

/** Bytes every format needs to be told apart (`RIFF....WEBP`). */
const SIGNATURE_BYTES = 12;
/** PNG's largest side (2^31 - 1, the most the PNG format allows). */
const PNG_MAX_SIDE = 0x7fffffff;

const INVALID: ImageSize = { status: 'invalid' };
const need = (bytes: number): ImageSize => ({ status: 'need', bytes });

/** The width and height the header of a PNG, JPEG, WebP or GIF image (its first bytes, `bytes`) declares. */
export function readImageSize(bytes: Uint8Array): ImageSize {
  if (bytes.length < SIGNATURE_BYTES) return need(SIGNATURE_BYTES);
  switch (sniffImageType(bytes)) {
    case 'image/png':
      return pngSize(bytes);
    case 'image/jpeg':
      return jpegSize(bytes);
    case 'image/webp':
      return webpSize(bytes);
    case 'image/gif':
      return gifSize(bytes);
    default:
      return INVALID;
  }
}

function sized(width: number, height: number): ImageSize {
  return width > 0 && height > 0 ? { status: 'size', width, height } : INVALID;
}

/** Signature, then the IHDR chunk, which must come first: length, `IHDR`, width and height (big-endian). */
function pngSize(bytes: Uint8Array): ImageSize {
  if (bytes.length < 24) return need(24);
  if (ascii(bytes, 12, 16) !== 'IHDR') return INVALID;
  const width = u32be(bytes, 16);
  const height = u32be(bytes, 20);
  return width > PNG_MAX_SIDE || height > PNG_MAX_SIDE ? INVALID : sized(width, height);
}

/**
 * Markers from SOI on, each segment skipped by its length, up to the first frame header (SOF0–SOF15 but
 * DHT C4, JPG C8 and DAC CC): precision, height, width. A scan or the end before any frame header is invalid.
 */
function jpegSize(bytes: Uint8Array): ImageSize {
  let position = 2; // after SOI
  for (;;) {
    if (bytes.length < position + 2) return need(position + 2);
    if (bytes[position] !== 0xff) return INVALID;
    // Any number of 0xFF fill bytes may stand before a marker (ITU T.81 §B.1.1.2).
    let markerAt = position + 1;
    while (markerAt < bytes.length && bytes[markerAt] === 0xff) markerAt++;
    if (markerAt >= bytes.length) return need(markerAt + 1);
    const marker = bytes[markerAt]!;
    position = markerAt + 1;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // TEM, RSTn: no length
    if (marker === 0x00 || marker === 0xd8 || marker === 0xd9 || marker === 0xda) return INVALID;
    if (bytes.length < position + 2) return need(position + 2);
    const length = u16be(bytes, position);
    if (length < 2) return INVALID;
    if (isFrameHeader(marker)) {
      if (length < 8) return INVALID;
      if (bytes.length < position + 7) return need(position + 7);
      return sized(u16be(bytes, position + 5), u16be(bytes, position + 3));
    }
    position += length;
  }
}

function isFrameHeader(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

/** `RIFF size WEBP`, then the first chunk: a lossy `VP8 ` frame, a lossless `VP8L` one, or the `VP8X` canvas. */
function webpSize(bytes: Uint8Array): ImageSize {
  if (bytes.length < 20) return need(20);
  const payload = 20; // after the chunk's four-character code and size
  switch (ascii(bytes, 12, 16)) {
    case 'VP8 ': {
      // A key frame (bit 0 of the frame tag clear), its start code, then 14-bit sides (RFC 6386 §9.1).
      if (bytes.length < payload + 10) return need(payload + 10);
      const keyFrame = (bytes[payload]! & 1) === 0;
      const startCode =
        bytes[payload + 3] === 0x9d && bytes[payload + 4] === 0x01 && bytes[payload + 5] === 0x2a;
      if (!keyFrame || !startCode) return INVALID;
      return sized(u16le(bytes, payload + 6) & 0x3fff, u16le(bytes, payload + 8) & 0x3fff);
    }
    case 'VP8L': {
      // Signature 0x2F, then width - 1 and height - 1 in 14 bits each.
      if (bytes.length < payload + 5) return need(payload + 5);
      if (bytes[payload] !== 0x2f) return INVALID;
      const bits = u32le(bytes, payload + 1);
      return sized((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
    }
    case 'VP8X':
      // Flags and reserved bytes, then canvas width - 1 and height - 1 in 24 bits each.
      if (bytes.length < payload + 10) return need(payload + 10);
      return sized(u24le(bytes, payload + 4) + 1, u24le(bytes, payload + 7) + 1);
    default:
      return INVALID;
  }
}

/** `GIF87a`/`GIF89a`, then the logical screen's width and height (little-endian). */
function gifSize(bytes: Uint8Array): ImageSize {
  return sized(u16le(bytes, 6), u16le(bytes, 8));
}

function ascii(bytes: Uint8Array, start: number, end: number): string {
  return String.fromCharCode(...bytes.subarray(start, end));
}

function u16be(bytes: Uint8Array, at: number): number {
  return (bytes[at]! << 8) | bytes[at + 1]!;
}

function u32be(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
}

function u16le(bytes: Uint8Array, at: number): number {
  return bytes[at]! | (bytes[at + 1]! << 8);
}

function u24le(bytes: Uint8Array, at: number): number {
  return bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16);
}

function u32le(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}
