// probeExportSource against real files made by ffmpeg at test time: every field an export plan reads, and the
// same refusals as an upload's probe (playlists, concat scripts, cut and random files are 415, nothing fetched).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { probeExportSource } from '../../workers/probe/export-probe.ts';
import { UNSUPPORTED_MEDIA_MESSAGE, type MediaProbeOptions } from '../../workers/probe/probe.ts';
import { AppError } from '../../src/platform/core/errors.ts';
import type { ExportSource } from '../../workers/export/work-order.ts';
import { ffmpeg, ffprobe, openEndedMdat } from '../helpers/media-analysis.ts';

const run = promisify(execFile);
const options: MediaProbeOptions = { ffmpegPath: ffmpeg, ffprobePath: ffprobe };
const encoders = execFileSync(ffmpeg, ['-hide_banner', '-encoders'], { encoding: 'utf8' });
const hasEncoder = (name: string) => new RegExp(`^\\s*[VAS][A-Z.]{5}\\s+${name}\\s`, 'm').test(encoders);
const MP3_ENCODER = ['libmp3lame', 'libshine', 'mp3'].find(hasEncoder);
// ffmpeg 6 and later set a display matrix with an input option; 5.x turns a `rotate` tag into one.
const HAS_DISPLAY_ROTATION = execFileSync(ffmpeg, ['-hide_banner', '-h', 'full'], {
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
}).includes('-display_rotation');

interface RawProbe {
  format: { duration?: string };
  streams: Array<{ codec_type: string; disposition?: { attached_pic?: number } }>;
}

/** ffprobe's own view of a fixture, to check the fixture is what a case claims and to compare durations. */
async function rawProbe(path: string): Promise<RawProbe> {
  const args = ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', `file:${path}`];
  return JSON.parse((await run(ffprobe, args)).stdout) as RawProbe;
}

async function assertUnsupported(work: Promise<unknown>, cause?: RegExp): Promise<void> {
  await assert.rejects(work, (error: unknown) => {
    assert.ok(error instanceof AppError, String(error));
    if (cause) assert.match(String(error.cause), cause);
    assert.equal(error.status, 415);
    assert.equal(error.code, 'unsupported_media');
    assert.deepEqual(error.toBody(), { error: 'unsupported_media', message: UNSUPPORTED_MEDIA_MESSAGE });
    return true;
  });
}

/** Reproducible noise (a linear congruential generator), so a failure can be replayed byte for byte. */
function noise(length: number, seed: number): Buffer {
  const bytes = Buffer.alloc(length);
  let state = seed >>> 0;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    bytes[i] = state >>> 24;
  }
  return bytes;
}

function box(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + body.length, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, body]);
}

describe('probeExportSource', () => {
  let dir: string;
  const file = (name: string) => join(dir, name);
  const trap = { requests: 0, connections: 0, port: 0, server: createServer() as Server };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mf-export-probe-'));
    const make = (...args: string[]) =>
      run(ffmpeg, ['-hide_banner', '-nostdin', '-v', 'error', '-y', ...args]);
    const h264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];
    const tone = (rate: number) => ['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=${rate}:duration=2`];
    await Promise.all([
      make(
        ...['-f', 'lavfi', '-i', 'testsrc2=size=720x1280:rate=30', ...tone(48000), '-t', '2'],
        ...h264,
        ...['-c:a', 'aac', '-ar', '48000', '-ac', '2', '-shortest'],
        file('portrait.mp4'),
      ),
      make(
        '-f',
        'lavfi',
        '-i',
        'testsrc2=size=320x240:rate=30000/1001',
        '-t',
        '1',
        ...h264,
        file('ntsc.mp4'),
      ),
      make('-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30', '-t', '1', ...h264, file('landscape.mp4')),
      make('-f', 'lavfi', '-i', 'testsrc2=size=320x240', '-frames:v', '1', file('image.png')),
      make(...tone(22050), '-ac', '1', file('tone.wav')),
      MP3_ENCODER && make(...tone(44100), '-ac', '2', '-c:a', MP3_ENCODER, file('tone.mp3')),
    ]);
    await make(
      ...[...tone(44100), '-i', file('image.png'), '-map', '0:a', '-map', '1:v'],
      ...['-c:a', 'aac', '-c:v', 'png', '-disposition:v:0', 'attached_pic'],
      file('cover.m4a'),
    );
    for (const degrees of [90, 270]) {
      const name = file(`rotated-${degrees}.mp4`);
      if (HAS_DISPLAY_ROTATION)
        await make('-display_rotation', String(degrees), '-i', file('landscape.mp4'), '-c', 'copy', name);
      else
        await make('-i', file('landscape.mp4'), '-c', 'copy', '-metadata:s:v:0', `rotate=${degrees}`, name);
    }
    const portrait = await readFile(file('portrait.mp4'));
    await writeFile(file('portrait-cut.mp4'), portrait.subarray(0, Math.floor(portrait.length / 2)));
    await make('-i', file('portrait.mp4'), '-c', 'copy', '-movflags', '+faststart', file('faststart.mp4'));
    const faststart = await readFile(file('faststart.mp4'));
    await writeFile(file('faststart-cut.mp4'), faststart.subarray(0, Math.floor(faststart.length / 2)));
    const open = openEndedMdat(faststart);
    await writeFile(file('open-ended.mp4'), open);
    await writeFile(file('open-ended-cut.mp4'), open.subarray(0, Math.floor(open.length / 2)));

    trap.server.on('connection', () => trap.connections++);
    trap.server.on('request', (_req, res) => {
      trap.requests++;
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => trap.server.listen(0, '127.0.0.1', resolve));
    trap.port = (trap.server.address() as AddressInfo).port;
    const playlist =
      `#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n` +
      `http://127.0.0.1:${trap.port}/x.ts\n#EXT-X-ENDLIST\n`;
    await writeFile(file('playlist.mp4'), playlist);
    // "ID3", v2.4, no flags, an empty tag: sniffed as mp3, so only the forced demuxer keeps ffprobe off the URL.
    const id3 = Buffer.from('49443304000000000000', 'hex');
    await writeFile(file('playlist-id3.mp3'), Buffer.concat([id3, Buffer.from(playlist)]));
    await writeFile(file('concat.mp4'), 'ffconcat version 1.0\nfile portrait.mp4\n');
    await writeFile(file('noise.mp4'), noise(64 * 1024, 0x5eed));
    // Sniffed as mp4 and tiled by its boxes, so only ffprobe (no moov) can refuse it.
    const ftyp = box('ftyp', Buffer.from('isom\0\0\x02\0isomiso2mp41', 'latin1'));
    await writeFile(file('noise-in-boxes.mp4'), Buffer.concat([ftyp, box('mdat', noise(64 * 1024, 7))]));
  });

  after(async () => {
    trap.server.closeAllConnections();
    await new Promise((resolve) => trap.server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  /** Probes `name` and checks its duration against ffprobe's, near `expectedSec`; answers the rest. */
  async function probeTimed(name: string, expectedSec: number): Promise<Omit<ExportSource, 'durationSec'>> {
    const { durationSec, ...rest } = await probeExportSource(file(name), options);
    assert.equal(durationSec, Number((await rawProbe(file(name))).format.duration));
    assert.ok(Math.abs(durationSec! - expectedSec) < 0.1, `duration ${durationSec}`);
    return rest;
  }

  describe('accepted sources', () => {
    it('reads a 720x1280 30 fps h264 mp4 with 48 kHz stereo AAC', async () => {
      assert.deepEqual(await probeTimed('portrait.mp4', 2), {
        path: file('portrait.mp4'),
        demuxer: 'mov',
        kind: 'video',
        video: { codec: 'h264', width: 720, height: 1280, fps: 30, pixFmt: 'yuv420p', rotation: 0 },
        audio: { codec: 'aac', sampleRate: 48000, channels: 2 },
      });
    });

    it('reads a 29.97 fps mp4 without audio: exact NTSC rate, no audio field', async () => {
      const source = await probeTimed('ntsc.mp4', 1);
      assert.deepEqual(source, {
        path: file('ntsc.mp4'),
        demuxer: 'mov',
        kind: 'video',
        video: { codec: 'h264', width: 320, height: 240, fps: 30000 / 1001, pixFmt: 'yuv420p', rotation: 0 },
      });
      assert.equal(source.video!.fps.toFixed(2), '29.97');
      assert.equal('audio' in source, false);
    });

    for (const degrees of [90, 270]) {
      it(`reads a ${degrees}° display rotation and keeps the stored (unswapped) size`, async () => {
        const source = await probeTimed(`rotated-${degrees}.mp4`, 1);
        assert.deepEqual(source.video, {
          codec: 'h264',
          width: 320,
          height: 240,
          fps: 30,
          pixFmt: 'yuv420p',
          rotation: degrees,
        });
        assert.equal(source.kind, 'video');
      });
    }

    it('reads an mp4 whose mdat runs "to the end of the file" (its packets are read too)', async () => {
      const source = await probeTimed('open-ended.mp4', 2);
      assert.equal(source.kind, 'video');
      assert.deepEqual(source.video, {
        codec: 'h264',
        width: 720,
        height: 1280,
        fps: 30,
        pixFmt: 'yuv420p',
        rotation: 0,
      });
      assert.deepEqual(source.audio, { codec: 'aac', sampleRate: 48000, channels: 2 });
    });

    it('reads a PNG as an image without duration, video or audio', async () => {
      assert.deepEqual(await probeExportSource(file('image.png'), options), {
        path: file('image.png'),
        demuxer: 'png_pipe',
        kind: 'image',
        durationSec: null,
      });
    });

    it('reads an mp3 as audio', { skip: !MP3_ENCODER }, async () => {
      assert.deepEqual(await probeTimed('tone.mp3', 2), {
        path: file('tone.mp3'),
        demuxer: 'mp3',
        kind: 'audio',
        audio: { codec: 'mp3', sampleRate: 44100, channels: 2 },
      });
    });

    it('reads a wav as audio', async () => {
      assert.deepEqual(await probeTimed('tone.wav', 2), {
        path: file('tone.wav'),
        demuxer: 'wav',
        kind: 'audio',
        audio: { codec: 'pcm_s16le', sampleRate: 22050, channels: 1 },
      });
    });

    it('reads an m4a with cover art as audio: the attached picture is not a video', async () => {
      const raw = await rawProbe(file('cover.m4a'));
      assert.deepEqual(
        raw.streams.map((s) => [s.codec_type, s.disposition?.attached_pic]),
        [
          ['audio', 0],
          ['video', 1],
        ],
        'the fixture does carry cover art',
      );
      assert.deepEqual(await probeTimed('cover.m4a', 2), {
        path: file('cover.m4a'),
        demuxer: 'mov',
        kind: 'audio',
        audio: { codec: 'aac', sampleRate: 44100, channels: 1 },
      });
    });
  });

  describe('refused sources', () => {
    // Each with the check that refuses it (the cause stays in the logs; clients see one message).
    const refusals: Array<[string, string, RegExp]> = [
      ['an HLS playlist named .mp4', 'playlist.mp4', /^no accepted container signature$/],
      [
        'an HLS playlist behind an ID3 header (sniffed as mp3, read only as mp3)',
        'playlist-id3.mp3',
        /^ffprobe exited with code [1-9]/,
      ],
      ['an ffconcat list naming a real file', 'concat.mp4', /^no accepted container signature$/],
      ['an mp4 cut in half (moov at the end)', 'portrait-cut.mp4', /^truncated mov$/],
      ['an mp4 cut in half (faststart: moov first)', 'faststart-cut.mp4', /^truncated mov$/],
      [
        'an mp4 cut in half whose mdat runs "to the end of the file"',
        'open-ended-cut.mp4',
        /^packet read exited with code [1-9]/,
      ],
      ['random bytes', 'noise.mp4', /^no accepted container signature$/],
      [
        'random bytes in well-formed mp4 boxes',
        'noise-in-boxes.mp4',
        /^ffprobe exited with code [1-9].*moov/s,
      ],
    ];
    for (const [what, name, cause] of refusals) {
      it(`refuses ${what} with 415`, async () => {
        await assertUnsupported(probeExportSource(file(name), options), cause);
      });
    }

    it('never lets a playlist reach the address it names', async () => {
      await assertUnsupported(probeExportSource(file('playlist.mp4'), options));
      await assertUnsupported(probeExportSource(file('playlist-id3.mp3'), options));
      // A wait for nothing: a connection ffprobe might make late must not come either.
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(trap.connections, 0);
      assert.equal(trap.requests, 0);
    });

    it('refuses a concat list that ffprobe left to guess would open as the file it names', async () => {
      const { stdout } = await run(ffprobe, [
        '-v',
        'error',
        '-show_format',
        '-of',
        'json',
        file('concat.mp4'),
      ]);
      assert.match(stdout, /"format_name": "concat"/, 'the threat is real: auto-detection opens it');
      await assertUnsupported(probeExportSource(file('concat.mp4'), options));
    });

    it('refuses a playlist that ffprobe left to guess would open as HLS', async () => {
      // Builds differ in which protocols HLS may then follow from a local file; opening it as HLS is the threat.
      const guessed = await run(ffprobe, [
        '-v',
        'warning',
        '-show_format',
        '-of',
        'json',
        file('playlist.mp4'),
      ]).then(
        ({ stderr }) => stderr,
        (error: { stderr?: string }) => error.stderr ?? '',
      );
      assert.match(guessed, /\[hls @/, 'the threat is real: auto-detection opens it as a playlist');
      const requests = trap.requests;
      await assertUnsupported(probeExportSource(file('playlist.mp4'), options), /^no accepted container/);
      assert.equal(trap.requests, requests);
    });

    it('refuses a source whose probe outlives its time limit', async () => {
      await assert.rejects(
        probeExportSource(file('portrait.mp4'), { ...options, timeoutMs: 1 }),
        (error: unknown) => {
          assert.ok(error instanceof AppError && error.status === 415, String(error));
          assert.match(String(error.cause), /timed out/);
          return true;
        },
      );
    });

    it('rejects with a plain error, not a 415, when ffprobe cannot start', async () => {
      await assert.rejects(
        probeExportSource(file('portrait.mp4'), { ...options, ffprobePath: file('no-such-ffprobe') }),
        (error: unknown) => {
          assert.ok(!(error instanceof AppError), String(error));
          assert.match(String(error), /could not be started/);
          return true;
        },
      );
    });
  });
});
