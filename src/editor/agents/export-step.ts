import type { DirectorIntent } from './director-intents.ts';
import { callAgentTool, readExportResult } from './tool-results.ts';
import { clipsPhrase, directorReply, toolErrorText, type DirectorTurn } from './turn-context.ts';

// "export it": the director exports the target video through `export_video` (the same export as
// `POST .../export`, docs/editor.md) and answers with the link.

const round = (seconds: number) => Math.round(seconds * 10) / 10;

/** Exports the target video as it is now and answers with its link, or says why it could not. */
export async function directorExport(
  ctx: DirectorTurn,
  intent: Extract<DirectorIntent, { kind: 'export' }>,
): Promise<string> {
  const outcome = await callAgentTool(ctx.tools, 'export_video', {
    ...(intent.fit ? { fit: intent.fit } : {}),
    ...(intent.quality ? { quality: intent.quality } : {}),
  });
  if (!outcome.ok) {
    return directorReply(
      `I couldn't export the video: ${toolErrorText(outcome.error)}.`,
      'What would you like to do?',
    );
  }
  const exported = readExportResult(outcome.result);
  if (!exported) {
    return directorReply(
      'The export finished, but its result did not say where the video is.',
      'Shall I try again?',
    );
  }
  const details = [
    exported.duration_sec === null ? null : `${round(exported.duration_sec)} s`,
    exported.video_clip_count === null ? null : clipsPhrase(exported.video_clip_count),
  ].filter(Boolean);
  const what = intent.quality === 'preview' ? 'a preview of your video (360p)' : 'your video';
  return directorReply(
    `Here is ${what}${details.length > 0 ? ` (${details.join(', ')})` : ''}: ${exported.video_url}`,
    'Would you like any changes?',
  );
}
