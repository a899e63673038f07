// Export child records against real processes: a restarted service kills the children a killed service left
// behind, and nothing else (a live owner's children, a reused pid), including after a real SIGKILL.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { createExportChildren } from '../../src/export/child-records.ts';

const logger = pino({ level: 'silent' });
const root = fileURLToPath(new URL('../..', import.meta.url));

/** Field 22 (starttime) of /proc/<pid>/stat, and the state: the comm field may hold spaces and ')'. */
function stat(pid: number): { startTime: string; state: string } | null {
  if (!existsSync(`/proc/${pid}/stat`)) return null;
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: rest[0]!, startTime: rest[19]! };
}

/** Gone, or a zombie (dead, waiting for its parent to reap it). */
function dead(pid: number): boolean {
  const s = stat(pid);
  return s === null || s.state === 'Z';
}

const children: ChildProcess[] = [];

function start(command: string, args: string[]): ChildProcess & { pid: number } {
  const child = spawn(command, args, { stdio: 'ignore' });
  children.push(child);
  assert.ok(child.pid);
  return child as ChildProcess & { pid: number };
}

/** A pid whose process has exited and been reaped. */
async function deadPid(): Promise<{ pid: number; startTime: string }> {
  const child = start('sleep', ['60']);
  const startTime = stat(child.pid)!.startTime;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return { pid: child.pid, startTime };
}

function writeRecord(
  dir: string,
  record: Record<string, unknown>,
  name = `${String(record.pid)}.json`,
): void {
  writeFileSync(join(dir, name), JSON.stringify(record));
}

let dir: string;
let scratch: string;

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'mf-child-records-'));
});

afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

after(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('export child records', () => {
  let n = 0;
  const freshDir = () => (dir = join(scratch, `records-${n++}`));

  it('records a running child with its start time and its owner, and forgets it when it ends', () => {
    const records = createExportChildren({ dir: freshDir(), logger });
    const child = start('sleep', ['60']);
    records.started(child.pid);
    const record = JSON.parse(readFileSync(join(dir, `${child.pid}.json`), 'utf8')) as Record<
      string,
      unknown
    >;
    assert.deepEqual(record, {
      pid: child.pid,
      start_time: stat(child.pid)!.startTime,
      owner_pid: process.pid,
      owner_start_time: stat(process.pid)!.startTime,
    });
    records.ended(child.pid);
    assert.deepEqual(readdirSync(dir), []);
    records.ended(child.pid); // already gone: no error
  });

  it('does not record a child that is already gone', async () => {
    const records = createExportChildren({ dir: freshDir(), logger });
    records.started((await deadPid()).pid);
    assert.deepEqual(readdirSync(dir), []);
  });

  it("kills only the leftover of a dead owner, leaving a live owner's child and its own children", async () => {
    const records = createExportChildren({ dir: freshDir(), logger });
    const deadOwner = await deadPid();
    const leftover = start('sleep', ['60']);
    writeRecord(dir, {
      pid: leftover.pid,
      start_time: stat(leftover.pid)!.startTime,
      owner_pid: deadOwner.pid,
      owner_start_time: deadOwner.startTime,
    });

    const liveOwner = start(process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
    const othersChild = start('sleep', ['60']);
    writeRecord(dir, {
      pid: othersChild.pid,
      start_time: stat(othersChild.pid)!.startTime,
      owner_pid: liveOwner.pid,
      owner_start_time: stat(liveOwner.pid)!.startTime,
    });

    const ownChild = start('sleep', ['60']);
    records.started(ownChild.pid);

    assert.deepEqual(await records.killLeftovers(), [leftover.pid]);
    assert.ok(dead(leftover.pid), 'the leftover is gone or a zombie when killLeftovers resolves');
    assert.ok(!dead(othersChild.pid));
    assert.ok(!dead(ownChild.pid));
    assert.deepEqual(readdirSync(dir).sort(), [`${othersChild.pid}.json`, `${ownChild.pid}.json`].sort());
  });

  it('treats an owner pid with another start time as dead (the owner pid was reused)', async () => {
    createExportChildren({ dir: freshDir(), logger });
    const leftover = start('sleep', ['60']);
    writeRecord(dir, {
      pid: leftover.pid,
      start_time: stat(leftover.pid)!.startTime,
      owner_pid: process.pid,
      owner_start_time: String(Number(stat(process.pid)!.startTime) - 1),
    });
    assert.deepEqual(await createExportChildren({ dir, logger }).killLeftovers(), [leftover.pid]);
    assert.ok(dead(leftover.pid));
    assert.deepEqual(readdirSync(dir), []);
  });

  it('does not kill a process whose start time differs from the record (a reused pid), but forgets it', async () => {
    const records = createExportChildren({ dir: freshDir(), logger });
    const deadOwner = await deadPid();
    const stranger = start('sleep', ['60']);
    writeRecord(dir, {
      pid: stranger.pid,
      start_time: String(Number(stat(stranger.pid)!.startTime) - 1),
      owner_pid: deadOwner.pid,
      owner_start_time: deadOwner.startTime,
    });
    assert.deepEqual(await records.killLeftovers(), []);
    assert.ok(!dead(stranger.pid));
    assert.deepEqual(readdirSync(dir), []);
  });

  it('deletes malformed records and leaves other files alone', async () => {
    const records = createExportChildren({ dir: freshDir(), logger });
    const child = start('sleep', ['60']);
    writeFileSync(join(dir, '123.json'), '{"pid": 123, "start_ti');
    writeFileSync(join(dir, '456.json'), JSON.stringify({ pid: 456, start_time: 1 }));
    // A record under another pid's name: never trusted.
    writeRecord(
      dir,
      { pid: child.pid, start_time: stat(child.pid)!.startTime, owner_pid: 1, owner_start_time: '0' },
      '789.json',
    );
    writeFileSync(join(dir, 'notes.txt'), 'not a record');
    assert.deepEqual(await records.killLeftovers(), []);
    assert.ok(!dead(child.pid));
    assert.deepEqual(readdirSync(dir), ['notes.txt']);
  });

  it('answers nothing for a folder that does not exist yet', async () => {
    const records = createExportChildren({ dir: freshDir(), logger });
    await rm(dir, { recursive: true });
    assert.deepEqual(await records.killLeftovers(), []);
  });

  it('kills the child of a service killed with SIGKILL when a new service starts on the same folder', async () => {
    freshDir();
    const script = join(scratch, 'crashing-service.ts');
    // The script lives outside the repository: its imports are resolved here.
    const module = JSON.stringify(join(root, 'src/export/child-records.ts'));
    const pinoUrl = JSON.stringify(import.meta.resolve('pino'));
    writeFileSync(
      script,
      `import { spawn } from 'node:child_process';
import { pino } from ${pinoUrl};
import { createExportChildren } from ${module};
const records = createExportChildren({ dir: ${JSON.stringify(dir)}, logger: pino({ level: 'silent' }) });
const child = spawn('sleep', ['60'], { stdio: 'ignore' });
records.started(child.pid!);
process.stdout.write(child.pid + '\\n', () => process.kill(process.pid, 'SIGKILL'));
`,
    );
    const service = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    service.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exit = await new Promise((resolve) => service.once('exit', (code, sig) => resolve({ code, sig })));
    assert.deepEqual(exit, { code: null, sig: 'SIGKILL' });
    const pid = Number(out.trim());
    assert.ok(Number.isInteger(pid) && pid > 0, `the service printed its child's pid: ${out}`);
    assert.ok(!dead(pid), 'the orphaned sleep outlived its service');

    const started = Date.now();
    assert.deepEqual(await createExportChildren({ dir, logger }).killLeftovers(), [pid]);
    assert.ok(Date.now() - started < 2_000);
    assert.ok(dead(pid));
    assert.deepEqual(readdirSync(dir), []);
  });
});
