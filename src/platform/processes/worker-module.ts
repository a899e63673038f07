// Where a worker thread's module is, and how to start it, for the Piscina pools (export/pool.ts,
// export/probe-pool.ts). A worker module is loaded by URL, not through the importer's module graph, so it must be
// named with the extension it has in the running tree: `.ts` under tsx, `.js` once compiled into dist/.

/**
 * The worker module at `relativePath` (no extension) from the calling module `moduleUrl` (its
 * `import.meta.url`), with the caller's own extension: tsconfig.build.json compiles src/, workers/ and the rest
 * with one root, so a path between two of them is the same in the sources and in dist/.
 */
export function workerModuleUrl(relativePath: string, moduleUrl: string): URL {
  const extension = new URL(moduleUrl).pathname.endsWith('.ts') ? 'ts' : 'js';
  return new URL(`${relativePath}.${extension}`, moduleUrl);
}

/**
 * Node options for the worker threads. A thread inherits the process's `execArgv`, which under tsx already
 * holds its loader (`--import …/tsx/dist/loader.mjs`); should tsx have been registered another way, a `.ts`
 * worker gets `--import tsx` explicitly, or it could not load.
 */
export function workerExecArgv(workerUrl: URL): string[] | undefined {
  if (!workerUrl.pathname.endsWith('.ts')) return undefined;
  if (process.execArgv.some((arg) => arg.includes('tsx'))) return undefined;
  return [...process.execArgv, '--import', 'tsx'];
}
