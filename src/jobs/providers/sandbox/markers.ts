/** A sandbox request's scripted behaviour, chosen by a marker in the prompt (docs/operator.md, Providers). */
export type SandboxBehaviour =
  | { kind: 'fail-submit' }
  | { kind: 'fail' }
  | { kind: 'hang' }
  | { kind: 'empty' }
  | { kind: 'normal'; delayMs?: number };

/** Longest `[sandbox:delay=<ms>]` honoured: an hour (longer would outlive any provider time-out anyway). */
const MAX_DELAY_MS = 3_600_000;

/** Reads the first sandbox marker of a prompt; without one the request behaves normally. */
export function sandboxBehaviour(prompt: string): SandboxBehaviour {
  const match = /\[sandbox:(fail-submit|fail|hang|empty|delay=(\d{1,10}))\]/.exec(prompt);
  if (!match) return { kind: 'normal' };
  if (match[2] !== undefined) return { kind: 'normal', delayMs: Math.min(Number(match[2]), MAX_DELAY_MS) };
  return { kind: match[1] as 'fail-submit' | 'fail' | 'hang' | 'empty' };
}
