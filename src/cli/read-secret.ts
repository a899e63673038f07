// Reading a secret (a password) for a CLI command without putting it where others can see it: never from the
// command line, which `ps` shows every user of the machine. Either typed at a terminal, not echoed, or piped in.

/** The most read from a pipe: far above any password the service accepts, it still bounds what is buffered. */
const MAX_PIPED_BYTES = 64 * 1024;

/** Ctrl-C and Ctrl-D as a terminal in raw mode sends them. */
const INTERRUPT = '\u0003';
const END_OF_INPUT = '\u0004';

/** The input ended (Ctrl-D, or a pipe) before a line was complete, or the user pressed Ctrl-C. */
export class SecretInputError extends Error {}

/**
 * Reads all of `input` (`--password-stdin`), without its one trailing line break (`echo pw | ...` adds one);
 * any other character, spaces included, belongs to the secret.
 */
export async function readPipedSecret(input: NodeJS.ReadableStream = process.stdin): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of input) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    bytes += buffer.length;
    if (bytes > MAX_PIPED_BYTES) throw new SecretInputError('the input is too long for a password');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/**
 * Prompts on stderr and reads one line from the terminal with echo off (raw mode: the characters typed are
 * never written back). Backspace edits; Enter ends the line; Ctrl-C or Ctrl-D rejects.
 */
export function promptSecret(
  prompt: string,
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WriteStream = process.stderr,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let typed = '';
    const wasRaw = input.isRaw;
    input.setRawMode(true);
    input.setEncoding('utf8');
    output.write(prompt);
    const finish = (settle: () => void) => {
      input.off('data', onData);
      input.setRawMode(wasRaw);
      input.pause();
      output.write('\n');
      settle();
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') return finish(() => resolve(typed));
        if (char === INTERRUPT) return finish(() => reject(new SecretInputError('interrupted')));
        if (char === END_OF_INPUT) return finish(() => reject(new SecretInputError('no password was typed')));
        if (char === '\u007f' || char === '\b') typed = [...typed].slice(0, -1).join('');
        else if (char >= ' ') typed += char;
      }
    };
    input.on('data', onData);
    input.resume();
  });
}
