// Runs a command at a pseudo-terminal, as a person at a keyboard would (Python's `pty` module does the
// terminal side): the test waits for prompts and types answers, and gets back everything the terminal showed.
import { spawn } from 'node:child_process';

/** Wait until the screen shows `waitFor`, then type `type` (a carriage return is Enter). */
export interface TerminalStep {
  waitFor: string;
  type: string;
}

/** What the terminal showed (stdout and stderr together, as a screen would) and how the command ended. */
export interface TerminalRun {
  screen: string;
  code: number | null;
}

const PTY_DRIVER = String.raw`
import json, os, pty, select, sys, time
spec = json.loads(sys.stdin.read())
pid, fd = pty.fork()
if pid == 0:
    os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
screen = b""
def read_some(deadline):
    global screen
    ready, _, _ = select.select([fd], [], [], max(0, deadline - time.time()))
    if not ready:
        return False
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        return False
    if not chunk:
        return False
    screen += chunk
    return True
deadline = time.time() + spec["timeout"]
for step in spec["steps"]:
    while step["waitFor"].encode() not in screen:
        if time.time() > deadline or not read_some(deadline):
            break
    os.write(fd, step["type"].encode())
while time.time() < deadline and read_some(deadline):
    pass
_, status = os.waitpid(pid, 0)
code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
print(json.dumps({"screen": screen.decode("utf8", "replace"), "code": code}))
`;

/** Runs `argv` at a terminal, typing each step's answer once its prompt shows; resolves when it has exited. */
export function runAtTerminal(
  argv: string[],
  env: Record<string, string | undefined>,
  steps: TerminalStep[],
  timeoutMs = 30_000,
): Promise<TerminalRun> {
  return new Promise((resolve, reject) => {
    const driver = spawn('python3', ['-c', PTY_DRIVER], { stdio: ['pipe', 'pipe', 'inherit'] });
    let output = '';
    driver.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    driver.once('error', reject);
    driver.once('close', (code) => {
      try {
        resolve(JSON.parse(output) as TerminalRun);
      } catch {
        reject(new Error(`the terminal driver failed (exit ${code}): ${output}`));
      }
    });
    const defined = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined));
    driver.stdin.end(JSON.stringify({ argv, env: defined, steps, timeout: timeoutMs / 1000 }));
  });
}
