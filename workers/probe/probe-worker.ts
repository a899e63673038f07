// The Piscina worker entry of the probe pool (src/export/probe-pool.ts): one task is one `probeExportSource`, so its
// ffprobe and ffmpeg children are forked from this thread and never block the service's main event loop.
// The answer is a tagged `ProbeOutcome`, never a thrown error: structured clone would turn the 415 `AppError`
// into a bare `Error` without its code or cause.
import { AppError } from '../../src/platform/core/index.ts';
import { probeExportSource } from './export-probe.ts';
import type { ExportSource } from '../export/plan.ts';

/** One probe, as posted to a thread. */
export interface ProbeTask {
  path: string;
  ffmpegPath: string;
  ffprobePath: string;
}

/**
 * A probe's answer across the thread boundary. Structured clone keeps an `Error`'s message but not its class,
 * code, details or cause, so the thread sends the refusal's reason and the main thread rebuilds the `AppError`.
 */
export type ProbeOutcome =
  { ok: true; source: ExportSource } | { ok: false; unsupported: string } | { ok: false; error: string };

async function probeTask(task: ProbeTask): Promise<ProbeOutcome> {
  const { path, ffmpegPath, ffprobePath } = task;
  try {
    return { ok: true, source: await probeExportSource(path, { ffmpegPath, ffprobePath }) };
  } catch (error) {
    // Every refusal is `unsupportedMedia(reason)`, which keeps the reason as the cause.
    if (error instanceof AppError && error.code === 'unsupported_media')
      return { ok: false, unsupported: String(error.cause) };
    return { ok: false, error: error instanceof Error ? error.message : String(error) };
  }
}

// Piscina runs a module's default export; a named one would also have to be in the folder's barrel.
export default probeTask;
