#!/usr/bin/env node
// The `mediaforge` command: runs the compiled service in dist/ (built by `npm install` or `npm run build`).
import { existsSync } from 'node:fs';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
// Checked up front rather than by catching the import's error, which would also hide a missing dependency.
if (!existsSync(main)) {
  process.stderr.write('mediaforge: not built — run npm run build\n');
  process.exit(1);
}
// Stack traces point at the TypeScript sources (dist/ ships its source maps).
process.setSourceMapsEnabled(true);
await import(main.href);
