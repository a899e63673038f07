// The storyboard is the builtin director's only memory between turns: it lives in the project context
// (so users can read and edit it), and a scene counts as done once the library holds a generated video whose
// prompt is that scene's text. Nothing else needs storing, and a deleted clip is never silently regenerated.

export interface Storyboard {
  subject: string;
  /** The scene prompts, in order (scene 1 first). */
  scenes: string[];
}

// Keeps every scene prompt far below the 4000-character prompt limit.
const SUBJECT_MAX = 400;

type Shot = (subject: string) => string;

const OPENING: Shot = (s) => `Establishing shot of ${s}, wide angle, cinematic lighting`;
const CLOSING: Shot = (s) => `Closing shot of ${s}, slow pull-back, calm ending`;
const SINGLE: Shot = (s) => `Cinematic shot of ${s}, gentle camera movement, cinematic lighting`;
// Distinct openings keep every scene's prompt unique, which the scene-done rule relies on.
const MIDDLE: readonly Shot[] = [
  (s) => `Close-up detail of ${s}, shallow depth of field, soft light`,
  (s) => `Medium shot of ${s}, natural movement, balanced composition`,
  (s) => `Slow tracking shot around ${s}, smooth camera movement`,
  (s) => `Low-angle shot of ${s}, dramatic perspective`,
  (s) => `Aerial view of ${s}, sweeping camera move`,
  (s) => `Slow pan across ${s}, rich atmosphere`,
  (s) => `Over-the-shoulder view of ${s}, a sense of presence`,
  (s) => `Time-lapse of ${s}, changing light`,
];

/** The most scenes a storyboard holds: one opening, one closing, and each distinct middle shot once. */
export const STORYBOARD_MAX_SCENES = MIDDLE.length + 2;

/** The scene prompts of a storyboard about `subject` (deterministic; `count` clamped to 1..STORYBOARD_MAX_SCENES). */
export function storyboardScenePrompts(subject: string, count: number): string[] {
  const s = subject.length > SUBJECT_MAX ? `${subject.slice(0, SUBJECT_MAX).trimEnd()}…` : subject;
  const n = Math.min(Math.max(Math.trunc(count), 1), STORYBOARD_MAX_SCENES);
  if (n === 1) return [SINGLE(s)];
  return [OPENING(s), ...MIDDLE.slice(0, n - 2).map((shot) => shot(s)), CLOSING(s)];
}

/** The Markdown section appended to the project context. */
export function formatStoryboard(board: Storyboard): string {
  const lines = board.scenes.map((scene, i) => `${i + 1}. ${scene}`);
  return [`## Storyboard: ${board.subject}`, '', ...lines, ''].join('\n');
}

const STORYBOARD_HEADING = /^\s{0,3}#{1,6}\s*storyboard\b\s*[:\-–—]?\s*(.*?)\s*#*\s*$/i;
const ANY_HEADING = /^\s{0,3}#{1,6}\s/;
const SCENE_LINE = /^\s*(?:[-*]\s+)?(?:scene\s+)?\d+\s*[.):]\s+(.+?)\s*$/i;

/** The last storyboard section of `contextMd` that lists at least one scene, or null. */
export function parseLastStoryboard(contextMd: string): Storyboard | null {
  const lines = contextMd.split(/\r?\n/);
  for (let start = lines.length - 1; start >= 0; start--) {
    const heading = STORYBOARD_HEADING.exec(lines[start]!);
    if (!heading) continue;
    const scenes: string[] = [];
    for (const line of lines.slice(start + 1)) {
      if (ANY_HEADING.test(line)) break;
      const scene = SCENE_LINE.exec(line);
      if (scene) scenes.push(scene[1]!);
    }
    if (scenes.length > 0) return { subject: heading[1]!, scenes };
  }
  return null;
}

function normalized(prompt: string): string {
  return prompt
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/(?:…|\.\.\.|\.)\s*$/, '')
    .trim();
}

// A library listing may shorten long prompts for the model ("…"), so a clearly truncated prompt that is a
// long enough prefix of the scene still counts; the distinct shot openings keep this unambiguous.
const TRUNCATED_MIN = 24;

/** What joins a scene's prompt to the user's note for it. */
const NOTE_SEPARATOR = '; ';

/** A scene's prompt with the user's note for it ("continue with the sunset"); the scene's own when none. */
export function sceneWithNote(scenePrompt: string, note: string): string {
  return note ? `${scenePrompt}${NOTE_SEPARATOR}${note}` : scenePrompt;
}

/** Whether an asset generated from `assetPrompt` is the scene `scenePrompt` (with or without a note). */
function isScenePrompt(assetPrompt: string, scenePrompt: string): boolean {
  const asset = normalized(assetPrompt);
  const scene = normalized(scenePrompt);
  if (asset === scene || asset.startsWith(`${scene}${NOTE_SEPARATOR}`)) return true;
  const truncated = /(?:…|\.\.\.)\s*$/.test(assetPrompt.trim());
  return truncated && asset.length >= TRUNCATED_MIN && scene.startsWith(asset);
}

/** The 1-based numbers of the scenes the given generated-video prompts already cover. */
export function storyboardScenesDone(board: Storyboard, generatedPrompts: readonly string[]): Set<number> {
  const done = new Set<number>();
  board.scenes.forEach((scene, i) => {
    if (generatedPrompts.some((prompt) => isScenePrompt(prompt, scene))) done.add(i + 1);
  });
  return done;
}
