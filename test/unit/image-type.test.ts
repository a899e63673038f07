import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sniffImageType } from '../../workers/probe/image-type.ts';

const bytes = (...parts: Array<number[] | string>) =>
  Buffer.concat(
    parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'latin1') : Buffer.from(part))),
  );

describe('sniffImageType', () => {
  it('recognises each supported signature', () => {
    assert.equal(sniffImageType(bytes([0x89], 'PNG\r\n\x1a\n', [0, 0, 0, 13])), 'image/png');
    assert.equal(sniffImageType(bytes([0xff, 0xd8, 0xff, 0xe0], 'JFIF')), 'image/jpeg');
    assert.equal(sniffImageType(bytes('GIF89a', [1, 0])), 'image/gif');
    assert.equal(sniffImageType(bytes('GIF87a')), 'image/gif');
    assert.equal(sniffImageType(bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8 ')), 'image/webp');
  });

  it('refuses everything else, including truncated signatures and other RIFF files', () => {
    for (const sample of [
      bytes('<!doctype html><html>'),
      bytes([0x89], 'PNG\r\n'),
      bytes('RIFF', [0x24, 0, 0, 0], 'WAVEfmt '),
      bytes('GIF88a'),
      bytes([0xff, 0xd8]),
      bytes(),
      bytes('%PDF-1.7'),
    ]) {
      assert.equal(sniffImageType(sample), null, JSON.stringify(sample.toString('latin1')));
    }
  });
});
