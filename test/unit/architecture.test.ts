import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DRIVERS = [/^mongodb$/, /^@nats-io\//, /^uWebSockets\.js$/, /^piscina$/];
// Domain code, actor handler code and export graph builders stay pure (DESIGN.md §1).
const PURE_PLACES = ['src/domain', 'actors', 'workers/export/graph'];

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(entry) ? [path] : [];
  });
}

/** Every module specifier a file imports, statically or dynamically. */
export function importsOf(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /\bfrom\s+['"]([^'"]+)['"]/g,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\bimport\s+['"]([^'"]+)['"]/g,
  ];
  for (const pattern of patterns) for (const match of source.matchAll(pattern)) found.push(match[1]!);
  return found;
}

describe('architecture', () => {
  it('keeps drivers out of domain code, actor handlers and export graph builders', () => {
    const offenders: string[] = [];
    for (const place of PURE_PLACES) {
      for (const file of sourceFiles(join(ROOT, place))) {
        for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
          if (DRIVERS.some((driver) => driver.test(specifier)))
            offenders.push(`${relative(ROOT, file)} imports ${specifier}`);
        }
      }
    }
    assert.deepEqual(offenders, []);
  });

  it('detects a driver import in any of its forms', () => {
    assert.deepEqual(importsOf(`import { MongoClient } from 'mongodb';`), ['mongodb']);
    assert.deepEqual(importsOf(`const m = await import('@nats-io/jetstream');`), ['@nats-io/jetstream']);
    assert.deepEqual(importsOf(`import 'uWebSockets.js';`), ['uWebSockets.js']);
    assert.deepEqual(importsOf(`export { x } from "piscina";`), ['piscina']);
  });

  it('reads process.env only in src/config.ts', () => {
    const offenders = sourceFiles(join(ROOT, 'src'))
      .concat(sourceFiles(join(ROOT, 'actors')), sourceFiles(join(ROOT, 'workers')))
      .filter((file) => !file.endsWith(join('src', 'config.ts')))
      .filter((file) => /process\.env\b/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(ROOT, file));
    assert.deepEqual(offenders, []);
  });
});
