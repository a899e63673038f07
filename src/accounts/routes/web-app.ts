import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { AppError, RawText, type Reply, type RouteDefinition, StreamedBody } from '../../platform/index.ts';

// The dashboard (docs/dashboard.md): the single-page application Vite builds from `web/` into `dist/web/`,
// served from our own origin. Its page answers every client-side path, never cached, under a
// Content-Security-Policy without inline script; its hashed assets are immutable. A browser sent to any other
// path gets the same page with status 404, and the application shows its not-found page there.

/** The client-side paths of the application (each answers its page; the application routes them). */
export const WEB_APP_PATHS = [
  '/',
  '/keys',
  '/webhooks',
  '/credits',
  '/jobs',
  // Not `/media`: that prefix is the stored files' (`/media/<id>`), and a trailing slash is ignored.
  '/gallery',
  '/editor',
  '/editor/:project_id',
] as const;

const ASSET_NAME = /^[\w.-]{1,200}$/;
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  woff2: 'font/woff2',
  map: 'application/json; charset=utf-8',
  ico: 'image/x-icon',
};

/** `dist/web` of the package this module belongs to (from `dist/src/…` or `src/…` alike). */
export function builtWebDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, 'dist', 'web');
}

/** Prefixes whose unknown paths stay a JSON 404: the APIs, files and protocol endpoints, never pages. */
const NOT_PAGES = ['/api', '/assets', '/media', '/oauth', '/.well-known'];

/** A browser's navigation (it asks for HTML) to a path that could be the application's. */
function isPageRequest(path: string, accept: string | undefined): boolean {
  if (!accept || !/\btext\/html\b/i.test(accept)) return false;
  return !NOT_PAGES.some((prefix) => path === prefix || path.startsWith(prefix + '/'));
}

/** The dashboard's routes, and its answer to a browser asking for a path that does not exist. */
export interface WebApp {
  routes: RouteDefinition[];
  /**
   * A GET of an unknown path: the application's page with status 404 when a browser navigates there (the
   * application shows its not-found page, docs/dashboard.md), undefined otherwise (the JSON 404).
   */
  notFoundPage(request: { path: string; headers: Record<string, string> }): Promise<Reply> | undefined;
}

export function createWebApp(options: { baseUrl: string; dir?: string }): WebApp {
  const dir = options.dir ?? builtWebDir();
  const indexPath = join(dir, 'index.html');
  const index = existsSync(indexPath) ? readFileSync(indexPath, 'utf8') : undefined;
  const base = new URL(options.baseUrl);
  const socketOrigin = `${base.protocol === 'https:' ? 'wss:' : 'ws:'}//${base.host}`;
  const pageHeaders = {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-cache',
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'content-security-policy': [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data: blob:",
      "media-src 'self' blob:",
      `connect-src 'self' ${socketOrigin}`,
      "object-src 'none'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'self'",
    ].join('; '),
  };
  const page = async (): Promise<Reply> => {
    if (!index) {
      throw new AppError('unavailable', 'The dashboard is not built: run `npm run build`');
    }
    return { status: 200, body: new RawText(index), headers: pageHeaders };
  };
  // Assets are a few files, read once each and kept: the page is the same for every user.
  const assets = new Map<string, Promise<Buffer | undefined>>();
  const asset = (name: string) => {
    let pending = assets.get(name);
    if (!pending) {
      pending = readFile(join(dir, 'assets', name)).catch(() => undefined);
      assets.set(name, pending);
    }
    return pending;
  };

  const routes: RouteDefinition[] = [
    ...WEB_APP_PATHS.map((path): RouteDefinition => ({
      method: 'GET',
      path,
      auth: { kind: 'none' },
      summary: 'The dashboard (single-page application)',
      responses: { 200: { description: 'The page' } },
      handle: page,
    })),
    {
      method: 'GET',
      path: '/assets/:name',
      auth: { kind: 'none' },
      summary: "The dashboard's hashed assets",
      responses: { 200: { description: 'A file' }, 404: { description: 'No such file' } },
      async handle(ctx) {
        const { name } = ctx.params as { name: string };
        const extension = name.slice(name.lastIndexOf('.') + 1);
        const type = CONTENT_TYPES[extension];
        const bytes = ASSET_NAME.test(name) && type ? await asset(name) : undefined;
        if (!bytes) {
          assets.delete(name); // a file that is not there is not remembered
          throw new AppError('not_found', 'Not found');
        }
        return {
          status: 200,
          body: new StreamedBody(Readable.from([bytes]), bytes.length),
          headers: {
            'content-type': type!,
            'cache-control': 'public, max-age=31536000, immutable',
            'x-content-type-options': 'nosniff',
          },
        };
      },
    },
  ];
  return {
    routes,
    notFoundPage: (request) =>
      isPageRequest(request.path, request.headers.accept)
        ? page().then((answer) => ({ ...answer, status: 404 }))
        : undefined,
  };
}
