// The image header reader (docs/editor.md "Media limits"): the size each format declares, read from crafted
// headers byte by byte; a header cut short asks for more bytes, and garbage is invalid, never a made-up size.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readImageSize, type ImageSize } from '../../workers/probe/image-size.ts';

const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ''), 'hex');
const ascii = (text: string) => Buffer.from(text, 'latin1');
const cat = (...parts: Buffer[]) => Buffer.concat(parts);
const u16be = (value: number) => hex(value.toString(16).padStart(4, '0'));
const u32be = (value: number) => hex(value.toString(16).padStart(8, '0'));
const u16le = (value: number) => u16be(value).reverse();
const u24le = (value: number) => hex(value.toString(16).padStart(6, '0')).reverse();
const u32le = (value: number) => u32be(value).reverse();
const size = (width: number, height: number): ImageSize => ({ status: 'size', width, height });
const INVALID: ImageSize = { status: 'invalid' };

const PNG_SIGNATURE = hex('89504e470d0a1a0a');
/** Signature, IHDR (8-bit grey) with its CRC field, then an IDAT's start: what a real file begins with. */
const png = (width: number, height: number) =>
  cat(
    PNG_SIGNATURE,
    u32be(13),
    ascii('IHDR'),
    u32be(width),
    u32be(height),
    hex('0800000000000000'),
    ascii('IDAT'),
  );

/** A JPEG segment: marker, length (counting itself), payload. */
const segment = (marker: number, payload: Buffer) =>
  cat(hex('ff'), Buffer.from([marker]), u16be(payload.length + 2), payload);
/** A frame header (SOFn): precision 8, height, width, one component. */
const frameHeader = (marker: number, width: number, height: number) =>
  segment(marker, cat(hex('08'), u16be(height), u16be(width), hex('01011100')));
const SOI = hex('ffd8');
const APP0 = segment(0xe0, cat(ascii('JFIF\0'), hex('0101000001000100 00')));
const DQT = segment(0xdb, Buffer.alloc(65));
const DHT = segment(0xc4, Buffer.alloc(29));
const SOS = segment(0xda, hex('010100 003f00'));

const riff = (chunk: string, payload: Buffer) =>
  cat(ascii('RIFF'), u32le(payload.length + 12), ascii('WEBP'), ascii(chunk), u32le(payload.length), payload);
/** A lossy key frame: frame tag (key frame, version 0, shown), start code, 14-bit sides. */
const vp8 = (width: number, height: number) =>
  riff('VP8 ', cat(hex('500200'), hex('9d012a'), u16le(width), u16le(height), Buffer.alloc(8)));
const vp8l = (width: number, height: number) =>
  riff('VP8L', cat(hex('2f'), u32le((width - 1) | ((height - 1) << 14)), Buffer.alloc(8)));
const vp8x = (width: number, height: number) =>
  riff('VP8X', cat(hex('10000000'), u24le(width - 1), u24le(height - 1)));
const gif = (width: number, height: number) =>
  cat(ascii('GIF89a'), u16le(width), u16le(height), hex('f70000'));

describe('readImageSize', () => {
  it('reads the size a PNG declares in its IHDR, the bomb included', () => {
    assert.deepEqual(readImageSize(png(640, 480)), size(640, 480));
    assert.deepEqual(readImageSize(png(15_000, 15_000)), size(15_000, 15_000));
    assert.deepEqual(readImageSize(png(1, 0x7fffffff)), size(1, 0x7fffffff));
  });

  it('reads the first frame header of a JPEG, whatever the marker (SOF0, SOF2, SOF15) and after other segments', () => {
    for (const marker of [0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc9, 0xcf]) {
      const file = cat(SOI, APP0, DQT, DHT, frameHeader(marker, 1920, 1080), DHT, SOS);
      assert.deepEqual(readImageSize(file), size(1920, 1080), marker.toString(16));
    }
  });

  it('skips JPEG segments by their length, fill bytes and standalone markers, never taking DHT, JPG or DAC for a frame', () => {
    // An EXIF segment whose payload holds what looks like a frame header: only its length is read.
    const exif = segment(0xe1, cat(ascii('Exif\0\0'), frameHeader(0xc0, 9, 9), Buffer.alloc(40_000)));
    const filled = cat(hex('ffffff'), frameHeader(0xc0, 300, 200).subarray(1));
    assert.deepEqual(readImageSize(cat(SOI, exif, hex('ffd0 ff01'), filled, SOS)), size(300, 200));
    // C4 (DHT), C8 (JPG) and CC (DAC) share the SOF range but are no frame headers.
    const lookalikes = [0xc4, 0xc8, 0xcc].map((marker) =>
      segment(marker, cat(hex('08'), u16be(7), u16be(7), hex('00'))),
    );
    assert.deepEqual(readImageSize(cat(SOI, ...lookalikes, frameHeader(0xc0, 64, 48))), size(64, 48));
  });

  it('reads the three kinds of WebP: lossy (VP8), lossless (VP8L) and extended (VP8X canvas)', () => {
    assert.deepEqual(readImageSize(vp8(320, 240)), size(320, 240));
    assert.deepEqual(readImageSize(vp8(16_383, 16_383)), size(16_383, 16_383));
    assert.deepEqual(readImageSize(vp8l(320, 240)), size(320, 240));
    assert.deepEqual(readImageSize(vp8l(16_384, 16_384)), size(16_384, 16_384));
    assert.deepEqual(readImageSize(vp8x(320, 240)), size(320, 240));
    assert.deepEqual(readImageSize(vp8x(16_777_216, 1)), size(16_777_216, 1));
  });

  it("reads a GIF's logical screen", () => {
    assert.deepEqual(readImageSize(gif(500, 400)), size(500, 400));
    assert.deepEqual(
      readImageSize(cat(ascii('GIF87a'), u16le(65_535), u16le(65_535), hex('f70000'))),
      size(65_535, 65_535),
    );
  });

  it('asks for more bytes when a header is cut short, and answers once it has them', () => {
    const files = [
      png(15_000, 15_000),
      cat(SOI, APP0, segment(0xe1, Buffer.alloc(5000)), frameHeader(0xc2, 800, 600)),
      vp8(320, 240),
      vp8l(320, 240),
      vp8x(320, 240),
    ];
    for (const file of files) {
      const expected = readImageSize(file);
      assert.equal(expected.status, 'size');
      let given = 0;
      let answer = readImageSize(file.subarray(0, given));
      // Each answer names more bytes than it was given, so a reader that follows it always gets somewhere.
      for (let rounds = 0; answer.status === 'need'; rounds++) {
        assert.ok(answer.bytes > given, `${answer.bytes} > ${given}`);
        assert.ok(rounds < 10, 'a handful of rounds');
        given = answer.bytes;
        answer = readImageSize(file.subarray(0, given));
      }
      assert.deepEqual(answer, expected);
      assert.ok(given <= file.length);
    }
    // A JPEG's header is not at a fixed place: the length of the segments before it says where to look.
    const jpeg = cat(SOI, APP0, segment(0xe1, Buffer.alloc(5000)), frameHeader(0xc0, 8, 8));
    assert.deepEqual(readImageSize(jpeg.subarray(0, 40)), {
      status: 'need',
      bytes: 2 + APP0.length + 5004 + 2,
    });
  });

  it('is invalid for garbage, other formats and headers that declare nothing usable', () => {
    const cases: Array<[string, Buffer]> = [
      ['text', ascii('<!doctype html><html><body>')],
      ['random bytes', hex('0123456789abcdef0123456789abcdef0123')],
      ['a PDF', ascii('%PDF-1.7\n%âãÏÓ\n1 0 obj')],
      ['a wav', cat(ascii('RIFF'), u32le(36), ascii('WAVEfmt '), Buffer.alloc(24))],
      ['a PNG whose first chunk is not IHDR', cat(PNG_SIGNATURE, u32be(13), ascii('CgBI'), Buffer.alloc(17))],
      ['a PNG of width 0', png(0, 10)],
      ['a PNG of height over 2^31 - 1', png(10, 0x80000000)],
      ['a JPEG scan before any frame header', cat(SOI, APP0, SOS, frameHeader(0xc0, 8, 8))],
      ['a JPEG that ends before any frame header', cat(SOI, APP0, hex('ffd9'), frameHeader(0xc0, 8, 8))],
      ['a JPEG with a second SOI', cat(SOI, SOI, frameHeader(0xc0, 8, 8))],
      ['a JPEG with bytes where a marker belongs', cat(SOI, hex('00112233'), frameHeader(0xc0, 8, 8))],
      ['a JPEG with a stuffed zero for a marker', cat(SOI, hex('ff00'), frameHeader(0xc0, 8, 8))],
      ['a JPEG segment shorter than its length field', cat(SOI, hex('ffe00001'), frameHeader(0xc0, 8, 8))],
      ['a JPEG frame header of height 0 (set later by DNL)', cat(SOI, frameHeader(0xc0, 8, 0))],
      ['a JPEG frame header too short to hold a size', cat(SOI, hex('ffc00005080010'), Buffer.alloc(8))],
      ['a WebP with an unknown first chunk', riff('ALPH', Buffer.alloc(16))],
      [
        'a lossy WebP frame that is not a key frame',
        riff('VP8 ', cat(hex('510200 9d012a'), u16le(8), u16le(8))),
      ],
      [
        'a lossy WebP frame without its start code',
        riff('VP8 ', cat(hex('500200 9d012b'), u16le(8), u16le(8))),
      ],
      ['a lossless WebP without its signature', riff('VP8L', cat(hex('2e'), u32le(0), Buffer.alloc(8)))],
      ['a lossy WebP of width 0', vp8(0, 8)],
      ['a GIF of height 0', gif(10, 0)],
      ['a GIF of an unknown version', cat(ascii('GIF88a'), u16le(1), u16le(1), Buffer.alloc(4))],
    ];
    for (const [what, bytes] of cases) assert.deepEqual(readImageSize(bytes), INVALID, what);
  });

  it('asks for the signature of anything shorter than it, and is invalid on nothing else', () => {
    assert.deepEqual(readImageSize(Buffer.alloc(0)), { status: 'need', bytes: 12 });
    assert.deepEqual(readImageSize(PNG_SIGNATURE), { status: 'need', bytes: 12 });
    assert.deepEqual(readImageSize(png(8, 8).subarray(0, 20)), { status: 'need', bytes: 24 });
    assert.deepEqual(readImageSize(vp8(8, 8).subarray(0, 16)), { status: 'need', bytes: 20 });
    assert.deepEqual(readImageSize(vp8(8, 8).subarray(0, 24)), { status: 'need', bytes: 30 });
    // A run of fill bytes to the end: the marker after them is still to come.
    assert.deepEqual(readImageSize(cat(SOI, Buffer.alloc(20, 0xff))), { status: 'need', bytes: 23 });
  });
});
