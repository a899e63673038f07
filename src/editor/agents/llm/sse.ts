// Server-sent events as the WHATWG HTML standard defines their parsing (§9.2.6 "Interpreting an event stream"),
// reduced to what Chat Completions streams use: `data:` fields joined by newlines, dispatched at a blank line;
// comments (`:`), `event:`, `id:` and `retry:` lines are read and ignored. Lines end in LF, CRLF or CR.

/** A stream that sends more than this without a blank line is broken (or hostile): it is refused. */
const MAX_EVENT_CHARS = 4 * 1024 * 1024;

/** Raised when the stream is not a readable event stream. */
export class EventStreamError extends Error {
  override name = 'EventStreamError';
}

/** The `data` of each event of `body`, in order; ends when the body ends. */
export async function* readEventData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let size = 0;
  // A CR at the end of a read may be the first half of a CRLF: it waits for the next read.
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    let start = 0;
    for (;;) {
      const end = lineEnd(buffer, start);
      if (end === -1) break;
      const line = buffer.slice(start, end);
      start = end + (buffer[end] === '\r' && buffer[end + 1] === '\n' ? 2 : 1);
      if (line === '') {
        if (data.length > 0) yield data.join('\n');
        data = [];
        size = 0;
        continue;
      }
      const value = fieldValue(line, 'data');
      if (value !== undefined) {
        data.push(value);
        size += value.length;
      }
    }
    buffer = buffer.slice(start);
    if (size + buffer.length > MAX_EVENT_CHARS) throw new EventStreamError('an event is too large');
  }
  buffer = (buffer + decoder.decode()).replace(/\r$/, '');
  const last = fieldValue(buffer, 'data');
  if (last !== undefined) data.push(last);
  // An event without its blank line at the very end is still dispatched: some servers omit the last one.
  if (data.length > 0) yield data.join('\n');
}

/** Where the line starting at `start` ends, or -1 when it has not ended yet. */
function lineEnd(buffer: string, start: number): number {
  for (let index = start; index < buffer.length; index += 1) {
    const char = buffer[index];
    if (char === '\n') return index;
    if (char === '\r') return index + 1 < buffer.length ? index : -1;
  }
  return -1;
}

/** The value of `line` when its field is `name` (one space after the colon is dropped). */
function fieldValue(line: string, name: string): string | undefined {
  if (!line.startsWith(name)) return undefined;
  if (line.length === name.length) return '';
  if (line[name.length] !== ':') return undefined;
  const value = line.slice(name.length + 1);
  return value.startsWith(' ') ? value.slice(1) : value;
}
