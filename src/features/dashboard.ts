import { webAppRoutes } from '../http/routes/web-app.ts';
import type { Feature } from './feature.ts';
import type { Platform } from './platform.ts';

/**
 * The dashboard (CONTRACT §11): the single-page application built into `dist/web/`. Its session API lives with
 * the accounts (`/api/dashboard/v1`); the page reaches everything else through `/api/v1`.
 */
export function dashboardFeature(platform: Pick<Platform, 'baseUrl'>): Feature {
  return {
    routes: webAppRoutes({ baseUrl: platform.baseUrl }),
    start: async () => undefined,
    stop: async () => undefined,
  };
}
