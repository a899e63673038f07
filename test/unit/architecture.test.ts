import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DRIVERS = [/^mongodb$/, /^@nats-io\//, /^uWebSockets\.js$/, /^piscina$/];
// Domain code, actor handler code and export graph builders stay pure.
const PURE_PLACES = ['src/domain', 'actors', 'workers/export/graph'];

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(entry) ? [path] : [];
  });
}

/**
 * The layers and which layers each may import: data flows one way, edge → service →
 * actor/port → adapter, and only the wiring (features, app) sees everything. A layer may always import itself.
 */
const WIRING = [
  'domain',
  'processes',
  'ports',
  'schemas',
  'actors',
  'services',
  'adapters',
  'http',
  'mcp',
  'observability',
  'config',
  'logger',
  'workers',
];
const LAYERS: Record<string, readonly string[]> = {
  domain: [],
  ports: ['domain'],
  schemas: ['domain'],
  logger: ['domain'],
  config: ['domain', 'schemas'],
  observability: ['domain', 'ports'],
  actors: ['domain', 'ports', 'schemas'],
  // Child processes that die with their parent: for the adapters and workers that run ffmpeg and jongodb.
  processes: [],
  workers: ['domain', 'ports', 'schemas', 'processes'],
  services: ['domain', 'ports', 'schemas', 'actors'],
  adapters: ['domain', 'ports', 'schemas', 'actors', 'processes'],
  http: ['domain', 'ports', 'schemas', 'services', 'observability'],
  // The MCP server: an edge like http, over the same services.
  mcp: ['domain', 'ports', 'schemas', 'services'],
  features: WIRING,
  app: [...WIRING, 'features'],
  cli: ['domain', 'config', 'app', 'logger'],
  // src/index.ts: the barrel of the whole service.
  index: [
    'app',
    'config',
    'logger',
    'adapters',
    'cli',
    'domain',
    'features',
    'http',
    'mcp',
    'observability',
    'ports',
    'processes',
    'services',
  ],
};

/** The layer of a source file: its folder under src/ (or the file itself for src/*.ts), else its top folder. */
export function layerOf(file: string): string {
  const parts = relative(ROOT, file).split(/[\\/]/);
  if (parts[0] === 'src') return parts.length === 2 ? parts[1]!.replace(/\.ts$/, '') : parts[1]!;
  return parts[0]!;
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

  it('keeps every import inside the layer matrix', () => {
    const offenders: string[] = [];
    const places = ['src', 'actors', 'schemas', 'workers'].flatMap((top) => sourceFiles(join(ROOT, top)));
    for (const file of places) {
      const from = layerOf(file);
      const allowed = LAYERS[from];
      if (!allowed) {
        offenders.push(`${relative(ROOT, file)} is in no layer (${from})`);
        continue;
      }
      for (const specifier of importsOf(readFileSync(file, 'utf8'))) {
        if (!specifier.startsWith('.')) continue;
        const to = layerOf(resolve(dirname(file), specifier));
        if (to !== from && !allowed.includes(to))
          offenders.push(`${relative(ROOT, file)} (${from}) imports ${specifier} (${to})`);
      }
    }
    assert.deepEqual(offenders, []);
  });

  it('gives every folder a barrel (index.ts; lint keeps each one complete)', () => {
    const folders = (dir: string): string[] =>
      readdirSync(dir)
        .map((entry) => join(dir, entry))
        .filter((path) => statSync(path).isDirectory())
        .flatMap((path) => [path, ...folders(path)]);
    const missing = ['src', 'actors', 'schemas', 'workers']
      .flatMap((top) => [join(ROOT, top), ...folders(join(ROOT, top))])
      .filter((folder) => !existsSync(join(folder, 'index.ts')))
      .map((folder) => relative(ROOT, folder));
    assert.deepEqual(missing, []);
  });

  it('places files in layers by folder', () => {
    assert.equal(layerOf(join(ROOT, 'src/services/jobs.ts')), 'services');
    assert.equal(layerOf(join(ROOT, 'src/adapters/mongo/jobs.ts')), 'adapters');
    assert.equal(layerOf(join(ROOT, 'src/config.ts')), 'config');
    assert.equal(layerOf(join(ROOT, 'actors/runtime/system.ts')), 'actors');
    assert.equal(layerOf(join(ROOT, 'schemas/jobs.ts')), 'schemas');
  });

  it('loads the native uWebSockets.js binding only in the HTTP front', () => {
    const offenders = ['src', 'actors', 'schemas', 'workers']
      .flatMap((top) => sourceFiles(join(ROOT, top)))
      .filter((file) => !file.endsWith(join('src', 'http', 'server.ts')) && !file.endsWith('index.ts'))
      .filter((file) => importsOf(readFileSync(file, 'utf8')).includes('uWebSockets.js'))
      .map((file) => relative(ROOT, file));
    assert.deepEqual(offenders, []);
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
