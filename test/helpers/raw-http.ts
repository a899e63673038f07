import { connect, type Socket } from 'node:net';

// HTTP/1.1 over a bare TCP socket, for tests of what a client library would never send (repeated framing
// headers, odd transfer codings, hand-made WebSocket handshakes) and of what happens to the connection after:
//
//   const conn = await RawConnection.open(service.url);
//   conn.send(rawRequest('POST', '/x', [['content-length', '2'], ['content-length', '3']], '{}'));
//   const answer = await conn.readResponse();      // one whole answer (Content-Length or chunked)
//   const { rest, closed } = await conn.readToEnd(); // everything after it, and whether the server closed

/** A request's bytes: the header fields in order, repeats allowed, none added (not even Host). */
export function rawRequest(
  method: string,
  path: string,
  headers: ReadonlyArray<readonly [string, string]>,
  body: string | Buffer = '',
): Buffer {
  const head = [`${method} ${path} HTTP/1.1`, ...headers.map(([name, value]) => `${name}: ${value}`)];
  return Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`), Buffer.from(body)]);
}

/** One parsed answer: header names lower-cased, repeated ones joined with ", ". */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The status line, headers and body as received. */
  raw: string;
}

/** A client connection that reads answers one at a time and notices when the server closes it. */
export class RawConnection {
  private buffer = Buffer.alloc(0);
  private ended = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.notify();
    });
    // A reset after the server closed (bytes it never read) counts as the close it is.
    socket.on('error', (error) => {
      this.error = error;
      this.ended = true;
      this.notify();
    });
    socket.on('close', () => {
      this.ended = true;
      this.notify();
    });
  }

  /** Connects to the host and port of `baseUrl`. */
  static open(baseUrl: string): Promise<RawConnection> {
    const { hostname, port } = new URL(baseUrl);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  send(bytes: string | Buffer): void {
    this.socket.write(bytes);
  }

  /** Reads one whole answer; fails when the connection ends first or after `timeoutMs`. */
  async readResponse(timeoutMs = 10_000): Promise<RawAnswer> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const answer = this.takeResponse();
      if (answer) return answer;
      if (this.ended)
        throw new Error(`connection closed before a whole answer: ${JSON.stringify(this.buffer.toString())}`);
      if (!(await this.waitForData(deadline)))
        throw new Error(`no whole answer in ${timeoutMs} ms: ${JSON.stringify(this.buffer.toString())}`);
    }
  }

  /**
   * Everything received until the server closes the connection (`closed`), or until `timeoutMs` passes with
   * the connection still open (then `closed` is false and the socket is destroyed).
   */
  async readToEnd(timeoutMs = 5_000): Promise<{ rest: string; closed: boolean; error?: string }> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended && (await this.waitForData(deadline)));
    const closed = this.ended;
    if (!closed) this.socket.destroy();
    const rest = this.buffer.toString('utf8');
    this.buffer = Buffer.alloc(0);
    return { rest, closed, ...(this.error ? { error: (this.error as NodeJS.ErrnoException).code } : {}) };
  }

  close(): void {
    this.socket.destroy();
  }

  private notify(): void {
    this.wake?.();
    this.wake = undefined;
  }

  /** True when something happened (data or the end) before the deadline. */
  private waitForData(deadline: number): Promise<boolean> {
    const left = deadline - Date.now();
    if (left <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), left);
      this.wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  private takeResponse(): RawAnswer | undefined {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const [statusLine, ...lines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1]);
    const start = end + 4;
    // A 101 has no body; any other answer is chunked or carries a Content-Length.
    const length = status === 101 ? 0 : Number(headers['content-length'] ?? 0);
    const framed =
      headers['transfer-encoding'] === 'chunked'
        ? dechunk(this.buffer, start)
        : { body: this.buffer.subarray(start, start + length), end: start + length };
    if (!framed || this.buffer.length < framed.end) return undefined;
    const raw = this.buffer.subarray(0, framed.end).toString('utf8');
    const body = framed.body.toString('utf8');
    this.buffer = this.buffer.subarray(framed.end);
    return { status, headers, body, raw };
  }
}

/** A chunked body starting at `start`: its bytes and where it ends, or undefined while incomplete. */
function dechunk(buffer: Buffer, start: number): { body: Buffer; end: number } | undefined {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = buffer.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(buffer.subarray(at, lineEnd).toString('latin1'), 16);
    if (size === 0) {
      const end = lineEnd + 4; // the last chunk's CRLF and the empty trailer line
      return buffer.length < end ? undefined : { body: Buffer.concat(parts), end };
    }
    const dataEnd = lineEnd + 2 + size;
    if (buffer.length < dataEnd + 2) return undefined;
    parts.push(buffer.subarray(lineEnd + 2, dataEnd));
    at = dataEnd + 2;
  }
}
