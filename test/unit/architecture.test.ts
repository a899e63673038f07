import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  doorViolations,
  importCycles,
  importsOf,
  missingPlaces,
  orderViolations,
  placeOf,
  purityViolations,
  readTree,
  unmappedSrcFolders,
  type SourceFile,
} from '../helpers/layer-map.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const tree = readTree(ROOT);

describe('the layer map (docs/architecture.md)', () => {
  it('finds every folder it names, and every slice has its door', () => {
    assert.deepEqual(missingPlaces(ROOT), []);
    assert.ok(
      tree.some(({ file }) => file.startsWith('web/src/')),
      'the dashboard is covered',
    );
  });

  it('knows every folder of src/ as a slice', () => {
    assert.deepEqual(unmappedSrcFolders(ROOT), []);
  });

  it('keeps every import inside the slice order', () => {
    assert.deepEqual(orderViolations(tree), []);
  });

  it('lets places meet only through their doors', () => {
    assert.deepEqual(doorViolations(tree), []);
  });

  it('has no import cycle, type-only imports included', () => {
    assert.deepEqual(importCycles(tree), []);
  });

  it('keeps drivers out of schemas, the platform core, actors, workers and the dashboard', () => {
    assert.deepEqual(purityViolations(tree), []);
  });

  it('loads the native uWebSockets.js binding only in the HTTP front', () => {
    const offenders = tree
      .filter(({ imports }) => imports.includes('uWebSockets.js'))
      .map(({ file }) => file)
      .filter((file) => file !== 'src/platform/http/server.ts');
    assert.deepEqual(offenders, []);
  });

  it('reads process.env only in the configuration module', () => {
    const offenders = tree
      .map(({ file }) => file)
      .filter((file) => !file.startsWith('web/') && file !== 'src/platform/config.ts')
      .filter((file) => /process\.env\b/.test(readFileSync(join(ROOT, file), 'utf8')));
    assert.deepEqual(offenders, []);
  });
});

describe('the layer map fails on a planted violation of each rule', () => {
  const planted = (file: string, ...imports: string[]): SourceFile[] => [{ file, imports }];

  it('places files by folder', () => {
    assert.equal(placeOf('src/jobs/jobs-service.ts'), 'jobs');
    assert.equal(placeOf('src/platform/core/errors.ts'), 'core');
    assert.equal(placeOf('src/platform/http/server.ts'), 'platform');
    assert.equal(placeOf('actors/runtime/system.ts'), 'actors');
    assert.equal(placeOf('web/src/app.tsx'), 'web');
  });

  it('an import against the order', () => {
    assert.equal(orderViolations(planted('src/jobs/x.ts', 'src/editor/index.ts')).length, 1);
    assert.equal(orderViolations(planted('src/webhooks/x.ts', 'src/editor/index.ts')).length, 1);
    assert.equal(orderViolations(planted('src/platform/x.ts', 'src/credits/index.ts')).length, 1);
    assert.equal(orderViolations(planted('actors/x.ts', 'src/platform/index.ts')).length, 1);
    assert.equal(orderViolations(planted('schemas/x.ts', 'src/platform/core/index.ts')).length, 1);
    assert.equal(orderViolations(planted('web/src/x.ts', 'src/editor/index.ts')).length, 1);
    assert.equal(orderViolations(planted('src/stray.ts', 'src/jobs/index.ts')).length, 1);
    assert.deepEqual(orderViolations(planted('src/editor/x.ts', 'src/jobs/index.ts', 'actors/index.ts')), []);
  });

  it('an import past a door', () => {
    assert.equal(doorViolations(planted('src/editor/x.ts', 'src/jobs/jobs-service.ts')).length, 1);
    assert.equal(doorViolations(planted('src/editor/x.ts', 'src/platform/core/errors.ts')).length, 1);
    assert.equal(doorViolations(planted('actors/x.ts', 'src/platform/core/errors.ts')).length, 1);
    assert.equal(doorViolations(planted('src/export/x.ts', 'workers/export/plan.ts')).length, 1);
    assert.deepEqual(doorViolations(planted('src/editor/x.ts', 'src/jobs/index.ts', 'schemas/jobs.ts')), []);
  });

  it('a cycle, however long', () => {
    const cycle = [
      { file: 'src/jobs/a.ts', imports: ['src/jobs/b.ts'] },
      { file: 'src/jobs/b.ts', imports: ['src/jobs/c.ts'] },
      { file: 'src/jobs/c.ts', imports: ['src/jobs/a.ts'] },
      { file: 'src/jobs/d.ts', imports: ['src/jobs/a.ts'] },
    ];
    assert.deepEqual(importCycles(cycle), [['src/jobs/a.ts', 'src/jobs/b.ts', 'src/jobs/c.ts']]);
    assert.deepEqual(importCycles(cycle.slice(0, 2)), []);
  });

  it('a driver in a pure place', () => {
    assert.equal(purityViolations(planted('actors/x.ts', 'mongodb')).length, 1);
    assert.equal(purityViolations(planted('src/platform/core/x.ts', '@nats-io/jetstream')).length, 1);
    assert.equal(purityViolations(planted('workers/export/x.ts', 'piscina')).length, 1);
    assert.deepEqual(purityViolations(planted('src/platform/mongo/x.ts', 'mongodb')), []);
  });

  it('reads imports in every form, type-only included', () => {
    assert.deepEqual(importsOf(`import type { A } from './a.ts';`), ['./a.ts']);
    assert.deepEqual(importsOf(`const m = await import('@nats-io/jetstream');`), ['@nats-io/jetstream']);
    assert.deepEqual(importsOf(`import 'uWebSockets.js';`), ['uWebSockets.js']);
    assert.deepEqual(importsOf(`export { x } from "piscina";`), ['piscina']);
  });
});
