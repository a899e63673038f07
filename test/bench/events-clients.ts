// A child process of test/bench/events.ts (forked, IPC with structured clone): holds `ws` clients of the
// events WebSocket and measures, for every message every client receives, receipt time − send time. It never
// parses the JSON: the few fields it needs are found with indexOf on the frame's bytes, so a client process
// costs as little CPU per message as `ws` allows (the clients share the machine's two cores with the
// service).
//
// Times are `performance.timeOrigin + performance.now()` (wall-clock aligned, sub-millisecond); a send time
// stamped by another process is corrected by the offset the parent measured between the two clocks.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import WebSocket from 'ws';

/** Histogram bins: 0.05 ms wide up to 5 s; the last bin holds everything slower. */
export const BIN_MS = 0.05;
export const BINS = 100_000;

/**
 * How a message's send time is found: `sent_at` — `data.sent_at` (ms, stamped by the bench at the publish
 * call); `ts` — the event's ISO `ts` (the actor's commit stamp, 1 ms resolution), plus the edit's send time
 * the bench wrote into the project's name (`bench@<ms>`), for the end-to-end figure.
 */
export type ClockSource = 'sent_at' | 'ts';

export type ClientCommand =
  | { cmd: 'clock' }
  | { cmd: 'connect'; url: string; token: string; count: number; source: ClockSource; concurrency: number }
  | { cmd: 'measure'; from: number; to: number; offsetMs: number }
  | { cmd: 'progress' }
  | { cmd: 'collect' }
  | { cmd: 'close' };

export interface ConnectResult {
  open: number;
  failed: number;
  /** Sockets closed by the service right after they opened (1006), replaced by new ones. */
  dropped: number;
  firstError?: string;
}

export interface Progress {
  open: number;
  /** The lowest and highest last seq over the open clients (-1 before any message). */
  minLast: number;
  maxLast: number;
}

export interface Collected {
  /** receipt − send (ms), one sample per message per client with `from <= seq <= to`. */
  latency: Uint32Array;
  /** `ts` source only: receipt − the edit's send time. */
  endToEnd: Uint32Array;
  /** Clients open when the window was set. */
  clients: number;
  /** Those clients × the seqs in the window. */
  expected: number;
  received: number;
  /** Messages whose seq was not the client's previous seq + 1. */
  outOfOrder: number;
  /** Close codes of clients closed since they connected. */
  closes: Record<string, number>;
  /** Errors of open sockets (a protocol error closes with 1006), the first few. */
  errors: string[];
  /** This process's event-loop delay during the window, ms (beyond the sampler's own interval). */
  loopP99Ms: number;
  loopMaxMs: number;
}

interface Client {
  ws: WebSocket;
  last: number;
  inWindow: number;
  /** Open when the window was set: it should get every seq of it. */
  windowed: boolean;
}

const SEQ = Buffer.from('"seq":');
const SENT_AT = Buffer.from('"sent_at":');
const TS = Buffer.from('"ts":"');
const NAME = Buffer.from('"name":"bench@');

/** The non-negative decimal number written at `at` (digits, an optional fraction). */
function readNumber(buf: Buffer, at: number): number {
  let value = 0;
  let scale = 0;
  for (let i = at; i < buf.length; i++) {
    const c = buf[i]!;
    if (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48);
      if (scale) scale *= 10;
    } else if (c === 46 && !scale) scale = 1;
    else break;
  }
  return scale ? value / scale : value;
}

const now = () => performance.timeOrigin + performance.now();
const bin = (ms: number) => Math.min(BINS, Math.max(0, Math.floor(ms / BIN_MS)));

const clients: Client[] = [];
const closes: Record<string, number> = {};
const errors: string[] = [];
let source: ClockSource = 'sent_at';
let from = Infinity;
let to = -Infinity;
let offsetMs = 0;
let latency = new Uint32Array(BINS + 1);
let endToEnd = new Uint32Array(BINS + 1);
let outOfOrder = 0;
let windowedClients = 0;
let receivedByClosed = 0;
// The sampler records the interval between its timer's runs: an idle loop reads LOOP_RESOLUTION_MS.
const LOOP_RESOLUTION_MS = 5;
const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
loop.enable();

function onMessage(client: Client, data: Buffer) {
  const received = now();
  const seq = readNumber(data, data.indexOf(SEQ) + SEQ.length);
  if (client.last >= 0 && seq !== client.last + 1) outOfOrder++;
  client.last = seq;
  if (seq < from || seq > to) return;
  client.inWindow++;
  if (source === 'sent_at') {
    const at = data.indexOf(SENT_AT);
    if (at >= 0) latency[bin(received - (readNumber(data, at + SENT_AT.length) + offsetMs))]!++;
    return;
  }
  const at = data.indexOf(TS) + TS.length;
  latency[bin(received - Date.parse(data.toString('latin1', at, at + 24)))]!++;
  const named = data.indexOf(NAME);
  if (named >= 0) endToEnd[bin(received - (readNumber(data, named + NAME.length) + offsetMs))]!++;
}

function open(url: string, token: string): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${token}` },
      perMessageDeflate: false,
      skipUTF8Validation: true,
    });
    const client: Client = { ws, last: -1, inWindow: 0, windowed: false };
    ws.once('open', () => {
      clients.push(client);
      resolve(client);
    });
    ws.once('unexpected-response', (_request, response) =>
      reject(new Error(`handshake answered ${response.statusCode}`)),
    );
    ws.once('error', reject);
    ws.on('error', (error) => {
      if (ws.readyState !== WebSocket.CONNECTING && errors.length < 5) errors.push(String(error));
    });
    ws.on('message', (data: Buffer) => onMessage(client, data));
    ws.on('close', (code) => {
      closes[code] = (closes[code] ?? 0) + 1;
      // A client closed during the window still counts what it got before.
      if (client.windowed) receivedByClosed += client.inWindow;
      const index = clients.indexOf(client);
      if (index >= 0) clients.splice(index, 1);
    });
  });
}

/**
 * Opens `count` more sockets, `concurrency` handshakes at a time. A socket the service closes right after it
 * opened (code 1006, no close frame) is counted as dropped and replaced, so a scenario runs with its clients.
 */
async function connect(command: Extract<ClientCommand, { cmd: 'connect' }>): Promise<ConnectResult> {
  source = command.source;
  const target = clients.length + command.count;
  let failed = 0;
  let opened = 0;
  let firstError: string | undefined;
  for (let round = 0; round < 5 && clients.length < target; round++) {
    let next = clients.length;
    const worker = async () => {
      while (next < target) {
        next++;
        try {
          await open(command.url, command.token);
          opened++;
        } catch (error) {
          failed++;
          firstError ??= String(error);
        }
      }
    };
    await Promise.all(Array.from({ length: command.concurrency }, worker));
    await new Promise((resolve) => setTimeout(resolve, 200)); // closes right after the open show by now
  }
  const dropped = opened - command.count + (target - clients.length);
  // Later closes are the window's business.
  for (const code of Object.keys(closes)) delete closes[code];
  return { open: clients.length, failed, dropped, ...(firstError ? { firstError } : {}) };
}

function progress(): Progress {
  let minLast = Infinity;
  let maxLast = -1;
  for (const client of clients) {
    minLast = Math.min(minLast, client.last);
    maxLast = Math.max(maxLast, client.last);
  }
  return { open: clients.length, minLast: clients.length ? minLast : -1, maxLast };
}

function collect(): Collected {
  let received = 0;
  for (const client of clients) if (client.windowed) received += client.inWindow;
  const windowed = Number.isFinite(from) ? to - from + 1 : 0;
  return {
    latency,
    endToEnd,
    clients: windowedClients,
    // Every client that was open when the window was set should have every seq of it.
    expected: windowedClients * windowed,
    received: received + receivedByClosed,
    outOfOrder,
    closes: { ...closes },
    errors: [...errors],
    loopP99Ms: Math.max(0, loop.percentile(99) / 1e6 - LOOP_RESOLUTION_MS),
    loopMaxMs: Math.max(0, loop.max / 1e6 - LOOP_RESOLUTION_MS),
  };
}

async function close(): Promise<void> {
  await Promise.all(
    [...clients].map(
      (client) =>
        new Promise<void>((resolve) => {
          if (client.ws.readyState === WebSocket.CLOSED) return resolve();
          client.ws.once('close', () => resolve());
          client.ws.close(1000);
        }),
    ),
  );
  clients.length = 0;
  for (const code of Object.keys(closes)) delete closes[code];
  errors.length = 0;
}

async function handle(command: ClientCommand): Promise<unknown> {
  switch (command.cmd) {
    case 'clock':
      return now();
    case 'connect':
      return connect(command);
    case 'measure':
      ({ from, to, offsetMs } = command);
      latency = new Uint32Array(BINS + 1);
      endToEnd = new Uint32Array(BINS + 1);
      outOfOrder = 0;
      receivedByClosed = 0;
      windowedClients = clients.length;
      for (const client of clients) {
        client.inWindow = 0;
        client.windowed = true;
      }
      loop.reset();
      return null;
    case 'progress':
      return progress();
    case 'collect':
      return collect();
    case 'close':
      await close();
      return null;
  }
}

process.on('message', (message: { id: number; command: ClientCommand }) => {
  handle(message.command).then(
    (value) => process.send!({ id: message.id, value }),
    (error: unknown) => process.send!({ id: message.id, error: String(error) }),
  );
});
// The parent going away (a crash, Ctrl-C) ends the clients too.
process.on('disconnect', () => process.exit(0));
