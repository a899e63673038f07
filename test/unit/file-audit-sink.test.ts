import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createManualClock } from '../../src/platform/core/clock.ts';
import type { AuditEntry } from '../../src/platform/audit/audit-sink.ts';
import { createFileAuditSink } from '../../src/platform/audit/file-sink.ts';

let root: string;
let counter = 0;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'mf-audit-'));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A directory that does not exist yet. */
function freshDir(): string {
  return join(root, `case-${++counter}`, 'audit');
}

function entry(n: number, fields: Partial<AuditEntry> = {}): AuditEntry {
  return {
    kind: 'request',
    ts: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
    key_id: 'key_a',
    user_id: 'usr_1',
    method: 'GET',
    path: `/api/v1/jobs/${n}`,
    status: 200,
    n,
    ...fields,
  };
}

async function linesOf(path: string): Promise<AuditEntry[]> {
  const text = await readFile(path, 'utf8');
  assert.ok(text.endsWith('\n'));
  return text
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as AuditEntry);
}

describe('file audit sink', () => {
  it('creates the directory on demand and appends one JSON object per line', async () => {
    const dir = freshDir();
    const sink = createFileAuditSink({ dir, clock: createManualClock() });
    await sink.write([entry(1), entry(2)]);
    await sink.write([entry(3, { note: 'line\nbreak "quoted"' })]);
    await sink.close();
    assert.deepEqual(await readdir(dir), ['audit-20260101-001.jsonl']);
    assert.deepEqual(await linesOf(join(dir, 'audit-20260101-001.jsonl')), [
      entry(1),
      entry(2),
      entry(3, { note: 'line\nbreak "quoted"' }),
    ]);
  });

  it('starts a new file when a batch would take the current one past maxFileBytes', async () => {
    const dir = freshDir();
    const lineBytes = Buffer.byteLength(JSON.stringify(entry(10)) + '\n');
    const sink = createFileAuditSink({ dir, maxFileBytes: lineBytes * 3, clock: createManualClock() });
    await sink.write([entry(10), entry(11)]);
    await sink.write([entry(12)]);
    await sink.write([entry(13)]);
    // A single batch bigger than the limit still goes whole into one (new) file.
    await sink.write([entry(14), entry(15), entry(16), entry(17)]);
    await sink.write([entry(18)]);
    await sink.close();
    const files = (await readdir(dir)).sort();
    assert.deepEqual(files, [
      'audit-20260101-001.jsonl',
      'audit-20260101-002.jsonl',
      'audit-20260101-003.jsonl',
      'audit-20260101-004.jsonl',
    ]);
    const contents = await Promise.all(files.map((f) => linesOf(join(dir, f))));
    assert.deepEqual(
      contents.map((lines) => lines.map((e) => e.n)),
      [[10, 11, 12], [13], [14, 15, 16, 17], [18]],
    );
    assert.ok((await stat(join(dir, files[0]!))).size <= lineBytes * 3);
  });

  it('starts a new file each UTC day', async () => {
    const dir = freshDir();
    const clock = createManualClock(Date.UTC(2026, 0, 31, 23, 59, 59));
    const sink = createFileAuditSink({ dir, clock });
    await sink.write([entry(1)]);
    clock.advance(2000);
    await sink.write([entry(2)]);
    await sink.write([entry(3)]);
    await sink.close();
    assert.deepEqual((await readdir(dir)).sort(), ['audit-20260131-001.jsonl', 'audit-20260201-001.jsonl']);
    assert.deepEqual(
      (await linesOf(join(dir, 'audit-20260201-001.jsonl'))).map((e) => e.n),
      [2, 3],
    );
  });

  it('reads entries newest first across files and days, with filters and a limit', async () => {
    const dir = freshDir();
    const clock = createManualClock(Date.UTC(2026, 0, 1, 12));
    const lineBytes = Buffer.byteLength(JSON.stringify(entry(10)) + '\n');
    const sink = createFileAuditSink({ dir, maxFileBytes: lineBytes * 4, clock });
    const all: AuditEntry[] = [];
    for (let n = 10; n < 40; n++) {
      const e = entry(n, {
        key_id: n % 3 === 0 ? 'key_b' : 'key_a',
        kind: n % 5 === 0 ? 'webhook_attempt' : 'request',
      });
      all.push(e);
      await sink.write([e]);
      if (n % 10 === 9) clock.advance(24 * 3600 * 1000);
    }
    assert.ok((await readdir(dir)).length > 6, 'entries are spread over several files');
    const newestFirst = [...all].reverse();

    assert.deepEqual(await sink.query({ limit: 5 }), newestFirst.slice(0, 5));
    assert.deepEqual(await sink.query({ limit: 1000 }), newestFirst);
    assert.deepEqual(
      await sink.query({ limit: 4, key_id: 'key_b' }),
      newestFirst.filter((e) => e.key_id === 'key_b').slice(0, 4),
    );
    assert.deepEqual(
      await sink.query({ limit: 100, kind: 'webhook_attempt' }),
      newestFirst.filter((e) => e.kind === 'webhook_attempt'),
    );
    assert.deepEqual(
      await sink.query({ limit: 100, kind: 'webhook_attempt', key_id: 'key_b' }),
      newestFirst.filter((e) => e.kind === 'webhook_attempt' && e.key_id === 'key_b'),
    );
    assert.deepEqual(await sink.query({ limit: 10, key_id: 'key_none' }), []);
    assert.deepEqual(await sink.query({ limit: 0 }), []);
    await sink.close();
  });

  it('reads lines that span its read chunks, including entries larger than a chunk', async () => {
    const dir = freshDir();
    const sink = createFileAuditSink({ dir, clock: createManualClock() });
    const written: AuditEntry[] = [];
    for (let n = 0; n < 40; n++) {
      const e = entry(n, { user_agent: n % 7 === 0 ? 'é'.repeat(70_000) : 'ua-' + 'x'.repeat(n * 300) });
      written.push(e);
    }
    await sink.write(written.slice(0, 20));
    await sink.write(written.slice(20));
    assert.deepEqual(await sink.query({ limit: 100 }), written.reverse());
    await sink.close();
  });

  it('answers an empty list when nothing was written yet', async () => {
    const sink = createFileAuditSink({ dir: freshDir() });
    assert.deepEqual(await sink.query({ limit: 10 }), []);
    await sink.close();
  });

  it('continues the day’s last file after a restart, but not one that ends in a cut-off line', async () => {
    const dir = freshDir();
    const clock = createManualClock();
    const first = createFileAuditSink({ dir, clock });
    await first.write([entry(1)]);
    await first.close();

    const second = createFileAuditSink({ dir, clock });
    await second.write([entry(2)]);
    await second.close();
    assert.deepEqual(await readdir(dir), ['audit-20260101-001.jsonl']);

    // A crash in the middle of a write leaves a line without its newline.
    await appendFile(join(dir, 'audit-20260101-001.jsonl'), '{"kind":"request","ts":"2026-');
    const third = createFileAuditSink({ dir, clock });
    await third.write([entry(3)]);
    assert.deepEqual((await readdir(dir)).sort(), ['audit-20260101-001.jsonl', 'audit-20260101-002.jsonl']);
    assert.deepEqual(
      (await third.query({ limit: 10 })).map((e) => e.n),
      [3, 2, 1],
    );
    await third.close();
  });

  it('refuses writes after close', async () => {
    const sink = createFileAuditSink({ dir: freshDir(), clock: createManualClock() });
    await sink.write([entry(1)]);
    await sink.close();
    await assert.rejects(sink.write([entry(2)]), /closed/);
  });
});
