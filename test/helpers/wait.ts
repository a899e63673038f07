import assert from 'node:assert/strict';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `read` every `everyMs` until `done` holds for its value; fails with the last value after `limitMs`. */
export async function until<T>(
  what: string,
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  limitMs = 15_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)} after ${limitMs} ms`);
    await sleep(everyMs);
  }
}
