// `npm run bench`: runs every benchmark in this folder, one after another (they must not share the CPU).
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const dir = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const benches = readdirSync(dir)
  // bare-*: a baseline server a bench starts; *-clients: a bench's client child process (events-clients.ts).
  .filter((file) => file.endsWith('.ts') && file !== 'run.ts' && !file.startsWith('bare-'))
  .filter((file) => !file.endsWith('-clients.ts'))
  .filter((file) => only.length === 0 || only.some((name) => file.startsWith(name)));
let failed = 0;
for (const file of benches) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(dir, file)], { stdio: 'inherit' });
  if (result.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
