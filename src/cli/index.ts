// The command line as a library: what `mediaforge serve` and `mediaforge admin …` run (main.ts loads each
// lazily, so an admin command never loads the service).
export { serve } from './serve.ts';
export { runAdminCommand } from './admin.ts';
export { createStopSignalPolicy, type StopSignal, type StopDecision } from './stop-signals.ts';
