export * from './admin-accounts.ts';
export * from './admin-http.ts';
export * from './admin.ts';
export * from './read-secret.ts';
export * from './serve.ts';
export * from './stop-signals.ts';
