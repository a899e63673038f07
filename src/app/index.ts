export { startApp, type StartedApp } from './app.ts';
