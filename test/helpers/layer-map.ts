// The map of the code (docs/architecture.md): which place each source file belongs to, which places it may
// import, through which door, and the cycles nobody may close. Pure functions over a list of files and their
// imports, so the architecture test can run them on the tree and on planted violations alike.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';

/** The capability slices under `src/`, in order: a slice may import only slices before it. Equal ranks meet never. */
export const SLICE_RANK: Readonly<Record<string, number>> = {
  platform: 0,
  credits: 1,
  accounts: 2,
  jobs: 3,
  webhooks: 4,
  editor: 4,
  export: 5,
  events: 6,
  mcp: 7,
  app: 8,
  cli: 9,
};

/** Places below the slices: what each may import besides itself. */
const FOUNDATIONS: Readonly<Record<string, readonly string[]>> = {
  schemas: [],
  // The driver-free part of the platform: errors, ids, clock, the event-bus and actor-transport ports.
  core: ['schemas'],
  actors: ['core', 'schemas'],
  workers: ['core', 'schemas'],
  // The dashboard runs in the browser: it shares the server's schemas, nothing else.
  web: ['schemas'],
};

/** The one file through which other places enter each place (none for schemas: every schema file is public). */
export const DOORS: Readonly<Record<string, string>> = {
  core: 'src/platform/core/index.ts',
  actors: 'actors/index.ts',
  workers: 'workers/index.ts',
  ...Object.fromEntries(Object.keys(SLICE_RANK).map((slice) => [slice, `src/${slice}/index.ts`])),
};

/** Every folder the map names; one that does not exist is an error (its rules could never fail). */
export const MAPPED_FOLDERS = [
  'schemas',
  'actors',
  'workers',
  'web/src',
  'src/platform/core',
  ...Object.keys(SLICE_RANK).map((slice) => `src/${slice}`),
];

/** Drivers that pure places never import: they would load a database client, a broker, a server or a pool. */
export const DRIVERS = [/^mongodb$/, /^@nats-io\//, /^uWebSockets\.js$/, /^piscina$/];
/** Places that import no driver. */
export const PURE_PLACES = ['schemas', 'core', 'actors', 'workers', 'web'];

/** The place of a repository-relative path: a slice name, `core`, or a top-level folder. */
export function placeOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'src') {
    if (parts[1] === 'platform' && parts[2] === 'core') return 'core';
    return parts.length === 2 ? `src-file:${parts[1]}` : parts[1]!;
  }
  return parts[0]!;
}

/** Every module specifier a source imports, statically, dynamically or for its types only. */
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

/** One source file and the repository-relative files (or package names) it imports. */
export interface SourceFile {
  file: string;
  imports: string[];
}

/** Reads the tree: every source file of the mapped places, with its relative imports resolved to files. */
export function readTree(root: string): SourceFile[] {
  const walk = (dir: string): string[] =>
    !existsSync(dir)
      ? []
      : readdirSync(dir).flatMap((entry) => {
          const path = join(dir, entry);
          if (statSync(path).isDirectory()) return walk(path);
          return /\.(ts|tsx|js|mjs)$/.test(entry) ? [path] : [];
        });
  return ['src', 'actors', 'workers', 'schemas', 'web/src']
    .flatMap((top) => walk(join(root, top)))
    .map((path) => ({
      file: relative(root, path).split('\\').join('/'),
      imports: importsOf(readFileSync(path, 'utf8')).map((specifier) =>
        specifier.startsWith('.')
          ? relative(root, resolve(dirname(path), specifier))
              .split('\\')
              .join('/')
          : specifier,
      ),
    }));
}

const isFile = (specifier: string) => /^(src|actors|workers|schemas|web)\//.test(specifier);

/** Imports from one place into another that the order does not allow. */
export function orderViolations(tree: readonly SourceFile[]): string[] {
  const offenders: string[] = [];
  for (const { file, imports } of tree) {
    const from = placeOf(file);
    for (const target of imports.filter(isFile)) {
      const to = placeOf(target);
      if (to === from || (from === 'platform' && to === 'core')) continue;
      if (!mayImport(from, to)) offenders.push(`${file} (${from}) imports ${target} (${to})`);
    }
  }
  return offenders;
}

function mayImport(from: string, to: string): boolean {
  if (from in FOUNDATIONS) return FOUNDATIONS[from]!.includes(to);
  if (from === 'platform') return to === 'schemas' || to === 'workers';
  const rank = SLICE_RANK[from];
  if (rank === undefined) return false; // a file directly in src/ other than a slice folder has no place
  if (to === 'schemas' || to === 'actors' || to === 'workers' || to === 'core') return true;
  const toRank = SLICE_RANK[to];
  return toRank !== undefined && toRank < rank;
}

/** Imports that reach into another place past its door. */
export function doorViolations(tree: readonly SourceFile[]): string[] {
  const offenders: string[] = [];
  for (const { file, imports } of tree) {
    const from = placeOf(file);
    for (const target of imports.filter(isFile)) {
      const to = placeOf(target);
      if (to === from || to === 'schemas' || (from === 'platform' && to === 'core')) continue;
      // A slice reaches the core through the platform's door; actors and workers through the core's own.
      const door = to === 'core' && from in SLICE_RANK ? DOORS.platform! : DOORS[to];
      if (door && target !== door) offenders.push(`${file} imports ${target}, not ${door}`);
    }
  }
  return offenders;
}

/** Every import cycle between files (type-only imports included), each as the files in order. */
export function importCycles(tree: readonly SourceFile[]): string[][] {
  const edges = new Map(tree.map(({ file, imports }) => [file, imports.filter(isFile)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let counter = 0;
  // Tarjan's strongly connected components, iteratively: a component of more than one file is a cycle.
  for (const start of edges.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = edges.get(frame.node) ?? [];
      if (frame.next < targets.length) {
        const target = targets[frame.next++]!;
        if (!edges.has(target)) continue;
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, next: 0 });
        } else if (onStack.has(target))
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1) cycles.push(component.sort());
      }
    }
  }
  return cycles;
}

/** Driver imports in places that must stay pure. */
export function purityViolations(tree: readonly SourceFile[]): string[] {
  return tree.flatMap(({ file, imports }) =>
    PURE_PLACES.includes(placeOf(file))
      ? imports.filter((s) => DRIVERS.some((driver) => driver.test(s))).map((s) => `${file} imports ${s}`)
      : [],
  );
}

/** Folders the map names that do not exist, and slice folders without their door. */
export function missingPlaces(root: string): string[] {
  const missing = MAPPED_FOLDERS.filter((folder) => !existsSync(join(root, folder)));
  const doors = Object.values(DOORS).filter((door) => !existsSync(join(root, door)));
  return [...missing, ...doors.map((door) => `${door} (door)`)];
}

/** Folders directly under src/ that are no slice of the map. */
export function unmappedSrcFolders(root: string): string[] {
  return readdirSync(join(root, 'src'))
    .filter((entry) => statSync(join(root, 'src', entry)).isDirectory())
    .filter((entry) => !(entry in SLICE_RANK))
    .map((entry) => posix.join('src', entry));
}
