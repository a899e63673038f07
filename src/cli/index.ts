export { serve } from './serve.ts';
export { runAdminCommand, adminCallFor } from './admin.ts';
