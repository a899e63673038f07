import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SNIFF_BYTES, sniffContainer } from '../../workers/probe/sniff.ts';

const hex = (text: string) => Buffer.from(text.replace(/\s+/g, ''), 'hex');
const ascii = (text: string) => Buffer.from(text, 'latin1');
/** A 64-byte head: `prefix` then filler, as a real file would continue. */
const head = (prefix: Buffer) =>
  Buffer.concat([prefix, Buffer.alloc(Math.max(0, SNIFF_BYTES - prefix.length), 0x20)]);
const box = (type: string, size = 8) => Buffer.concat([hex(size.toString(16).padStart(8, '0')), ascii(type)]);

describe('media sniffing', () => {
  it('names the container and the demuxer to force for each accepted signature', () => {
    const cases: Array<[string, Buffer, string, string]> = [
      ['png', hex('89504e470d0a1a0a0000000d49484452'), 'png', 'png_pipe'],
      ['jpeg', hex('ffd8ffe000104a464946'), 'jpeg', 'jpeg_pipe'],
      ['webp', Buffer.concat([ascii('RIFF'), hex('24000000'), ascii('WEBPVP8 ')]), 'webp', 'webp_pipe'],
      ['wav', Buffer.concat([ascii('RIFF'), hex('24000000'), ascii('WAVEfmt ')]), 'wav', 'wav'],
      ['mp4', Buffer.concat([box('ftyp', 32), ascii('isom')]), 'mov', 'mov'],
      ['QuickTime', Buffer.concat([box('ftyp', 20), ascii('qt  ')]), 'mov', 'mov'],
      ['mp3 with ID3', ascii('ID3\x04\x00\x00'), 'mp3', 'mp3'],
      ['mp3 frame (MPEG-1)', hex('fffb9064'), 'mp3', 'mp3'],
      ['mp3 frame (MPEG-2, CRC)', hex('fff2'), 'mp3', 'mp3'],
      ['mp3 frame (MPEG-2.5)', hex('ffe3'), 'mp3', 'mp3'],
      ['AAC ADTS (MPEG-4)', hex('fff15080'), 'aac', 'aac'],
      ['AAC ADTS (MPEG-2)', hex('fff95080'), 'aac', 'aac'],
    ];
    for (const [name, prefix, container, demuxer] of cases) {
      assert.deepEqual(sniffContainer(head(prefix)), { container, demuxer }, name);
    }
  });

  it('accepts QuickTime files that predate ftyp by their first box', () => {
    for (const type of ['moov', 'mdat', 'free', 'wide', 'skip', 'pnot']) {
      assert.equal(sniffContainer(head(box(type)))?.demuxer, 'mov', type);
    }
    assert.equal(sniffContainer(head(box('mdat', 0)))?.demuxer, 'mov', 'size 0 runs to the end of the file');
    assert.equal(sniffContainer(head(box('wide', 3))), null, 'a box smaller than its own header');
  });

  it('refuses playlists, concat scripts, SDP, text and markup, which ffmpeg would follow or parse', () => {
    const refused = [
      '#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nhttp://127.0.0.1:1/seg.ts\n',
      'ffconcat version 1.0\nfile /etc/passwd\n',
      "file '/etc/passwd'\n",
      'v=0\no=- 0 0 IN IP4 127.0.0.1\ns=x\nc=IN IP4 127.0.0.1\nm=video 5004 RTP/AVP 96\n',
      '<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011"></MPD>',
      '[Script Info]\nScriptType: v4.00+\n',
      'just some text that is not media',
      '{"not": "media"}',
    ];
    for (const text of refused) assert.equal(sniffContainer(head(ascii(text))), null, text.slice(0, 20));
  });

  it('refuses near misses of the signatures', () => {
    const nearMisses: Array<[string, Buffer]> = [
      ['RIFF of another kind (AVI)', Buffer.concat([ascii('RIFF'), hex('24000000'), ascii('AVI LIST')])],
      ['MPEG layer II frame', hex('fffd9064')],
      ['MPEG layer I frame', hex('ffff9064')],
      ['reserved MPEG version', hex('ffeb9064')],
      ['lone 0xFF', hex('ff00')],
      ['PNG signature cut short', hex('89504e470d0a')],
      ['ftyp at the wrong offset', Buffer.concat([ascii('ftyp'), hex('00000020')])],
      ['an unknown first box', box('abcd')],
    ];
    for (const [name, bytes] of nearMisses) assert.equal(sniffContainer(head(bytes)), null, name);
  });

  it('decides on fewer bytes than a full head and refuses an empty file', () => {
    assert.equal(sniffContainer(hex('ffd8ff'))?.container, 'jpeg');
    assert.equal(sniffContainer(hex('fff1'))?.container, 'aac');
    assert.equal(sniffContainer(Buffer.alloc(0)), null);
    assert.equal(sniffContainer(ascii('RIFF')), null);
  });
});
