import { createWebApp, type WebApp } from './routes/web-app.ts';
import type { Feature, Platform } from '../platform/index.ts';

/**
 * The dashboard (docs/dashboard.md): the single-page application built into `dist/web/`. Its session API
 * lives with the accounts (`/api/dashboard/v1`); the page reaches everything else through `/api/v1`.
 */
export interface DashboardFeature extends Feature {
  /** The page's answer to a browser at a path that does not exist (for the pipeline's 404). */
  notFoundPage: WebApp['notFoundPage'];
}

export function dashboardFeature(platform: Pick<Platform, 'baseUrl'>): DashboardFeature {
  const app = createWebApp({ baseUrl: platform.baseUrl });
  return {
    routes: app.routes,
    notFoundPage: app.notFoundPage,
    start: async () => undefined,
    stop: async () => undefined,
  };
}
