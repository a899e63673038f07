// Imports test files one after another into this one process (test/run.ts runs the unit and integration tests
// so): their tests register with node:test and run here, without a process and a TypeScript loader of their own
// per file, which cost more CPU than most of those files' tests. Run it as
// `node --import tsx --test-reporter=spec test/helpers/import-all.ts <files>`; it exits 1 if any test failed.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

for (const file of process.argv.slice(2)) await import(pathToFileURL(resolve(file)).href);
