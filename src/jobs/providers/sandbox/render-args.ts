// Pure builders of the sandbox's ffmpeg command lines (no I/O): render.ts writes the caption text and input
// files these plans name, then runs the arguments. Only filters present in both ffmpeg 5.1 (Debian) and the
// 2018 @ffmpeg-installer build are used: color, sine, volume, scale, crop, setsar, zoompan, split, overlay,
// drawtext, format.

/** Frame rate of every sandbox video. */
export const FPS = 24;
/** Longest prompt text considered for a caption; the rest could never be shown anyway. */
const MAX_PROMPT_CHARS = 2000;
/** A `drawtext` caption from an empty file fails to load, so an empty prompt shows this instead. */
const EMPTY_PROMPT = '(no prompt)';

// ---------------------------------------------------------------------------------------------- escaping

const SAFE_FILTER_VALUE = /^[A-Za-z0-9_.+\-*/()@#%]+$/;

/**
 * Escapes a value for a filter option inside a `-filter_complex` graph. Two parsers read it: the graph
 * parser (which splits on `[],;` and honours `\` and quotes), then the filter's option parser (which splits on
 * `:`). So the value is single-quoted for the second, then every character special to the first is escaped.
 */
export function filterValue(value: string | number): string {
  const text = String(value);
  if (SAFE_FILTER_VALUE.test(text)) return text;
  const quoted = `'${text.replaceAll("'", "'\\''")}'`;
  return quoted.replace(/[\\'[\],;]/g, '\\$&');
}

/** One filter: `name=key=value:key=value`, every value escaped. */
export function filter(name: string, options: Record<string, string | number> = {}): string {
  const entries = Object.entries(options).map(([key, value]) => `${key}=${filterValue(value)}`);
  return entries.length > 0 ? `${name}=${entries.join(':')}` : name;
}

/** ffmpeg reads a bare path with a colon as a protocol (`a:b`); `file:` makes any path a plain file. */
export function fileUrl(path: string): string {
  return `file:${path}`;
}

// ---------------------------------------------------------------------------------------------- seeds

/** A 32-bit avalanche hash of an integer seed (any safe integer, negative included). */
export function seedHash(seed: number, salt = 0): number {
  const value = Number.isFinite(seed) ? Math.trunc(seed) : 0;
  const low = (value % 0x1_0000_0000) >>> 0;
  const high = Math.floor(value / 0x1_0000_0000) >>> 0;
  let h = Math.imul(low ^ Math.imul(high, 0x27d4eb2d) ^ Math.imul(salt + 1, 0x9e3779b9), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A dark, saturated background colour (`0xRRGGBB`) chosen by the seed: white captions stay readable. */
export function seededColor(seed: number, index = 0): string {
  const hue = seedHash(seed, index) % 360;
  const [r, g, b] = hslToRgb(hue, 0.55, 0.3);
  return `0x${[r, g, b].map((c) => c.toString(16).padStart(2, '0')).join('')}`;
}

/** The pitch (Hz) of the quiet tone of a video with audio. */
export function toneFrequency(seed: number): number {
  return 220 + (seedHash(seed, 7919) % 221);
}

function hslToRgb(hue: number, saturation: number, lightness: number): [number, number, number] {
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const x = chroma * (1 - Math.abs(((hue / 60) % 2) - 1));
  const m = lightness - chroma / 2;
  const sector = Math.floor(hue / 60);
  const [r, g, b] = [
    [chroma, x, 0],
    [x, chroma, 0],
    [0, chroma, x],
    [0, x, chroma],
    [x, 0, chroma],
    [chroma, 0, x],
  ][sector]!;
  return [r!, g!, b!].map((c) => Math.round((c + m) * 255)) as [number, number, number];
}

// ---------------------------------------------------------------------------------------------- captions

/** Prompt text made safe to draw: one kind of line break, no control or format characters, no runs of blanks. */
export function sanitizePrompt(prompt: string): string {
  const lines = prompt
    .slice(0, MAX_PROMPT_CHARS)
    .normalize('NFC')
    .split(/\r\n|[\r\n\u2028\u2029\u0085]/)
    .map((line) =>
      line
        .replace(/\t/g, ' ')
        .replace(/[\p{Cc}\p{Cf}\p{Cs}]/gu, '')
        .replace(/\s+/gu, ' ')
        .trim(),
    );
  const text = lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return text || EMPTY_PROMPT;
}

/** Columns a character takes: East Asian wide characters and emoji count as two. */
function charColumns(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  const wide =
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1f300 && code <= 0x1faff) ||
    (code >= 0x20000 && code <= 0x3fffd);
  return wide ? 2 : 1;
}

function columns(text: string): number {
  let total = 0;
  for (const char of text) total += charColumns(char);
  return total;
}

/** Splits a word longer than a line into line-sized pieces. */
function chunkWord(word: string, maxColumns: number): string[] {
  const pieces: string[] = [];
  let piece = '';
  for (const char of word) {
    if (piece && columns(piece) + charColumns(char) > maxColumns) {
      pieces.push(piece);
      piece = '';
    }
    piece += char;
  }
  if (piece) pieces.push(piece);
  return pieces;
}

/**
 * Word-wraps text to lines of at most `maxColumns` columns, keeping its line breaks; past `maxLines` the
 * last kept line ends with an ellipsis.
 */
export function wrapText(text: string, maxColumns: number, maxLines: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ').filter(Boolean)) {
      for (const piece of columns(word) > maxColumns ? chunkWord(word, maxColumns) : [word]) {
        if (!line) line = piece;
        else if (columns(line) + 1 + columns(piece) <= maxColumns) line += ` ${piece}`;
        else {
          lines.push(line);
          line = piece;
        }
      }
    }
    lines.push(line);
  }
  if (lines.length <= maxLines) return lines;
  const kept = lines.slice(0, maxLines);
  let last = kept[maxLines - 1]!;
  while (last && columns(last) + 1 > maxColumns) last = Array.from(last).slice(0, -1).join('');
  kept[maxLines - 1] = `${last.trimEnd()}…`;
  return kept;
}

/** A laid-out caption: the text for drawtext's `textfile`, and the font size it was wrapped for. */
export interface Caption {
  text: string;
  fontSize: number;
  lineSpacing: number;
}

/** DejaVu Sans averages about 0.6 em per character: the width budget of one column. */
const EM_PER_COLUMN = 0.6;

function layoutCaption(prompt: string, width: number, fontSize: number, maxLines: number): Caption {
  const maxColumns = Math.max(8, Math.floor((width * 0.86) / (fontSize * EM_PER_COLUMN)));
  const lines = wrapText(sanitizePrompt(prompt), maxColumns, Math.max(1, maxLines));
  return { text: lines.join('\n'), fontSize, lineSpacing: Math.round(fontSize * 0.3) };
}

/** The prompt as a large caption in the middle of the frame (text-to-video, text-to-image). */
export function centerCaption(prompt: string, width: number, height: number): Caption {
  const fontSize = Math.round(Math.min(width, height) / 16);
  const maxLines = Math.min(10, Math.floor((height * 0.7) / (fontSize * 1.3)));
  return layoutCaption(prompt, width, fontSize, maxLines);
}

/** The prompt as a small caption at the bottom, over an image (image-to-video, image edit). */
export function bottomCaption(prompt: string, width: number, height: number): Caption {
  return layoutCaption(prompt, width, Math.round(Math.min(width, height) / 26), 3);
}

function captionFilter(caption: Caption, files: { textFile: string; fontFile: string }, y: string): string {
  return filter('drawtext', {
    fontfile: files.fontFile,
    textfile: files.textFile,
    // The prompt is shown as typed: no %{...} expansion.
    expansion: 'none',
    fontsize: caption.fontSize,
    line_spacing: caption.lineSpacing,
    fontcolor: 'white',
    box: 1,
    boxcolor: 'black@0.35',
    boxborderw: Math.round(caption.fontSize / 3),
    x: '(w-text_w)/2',
    y,
  });
}

// ---------------------------------------------------------------------------------------------- video

/** What a video render draws and how long it lasts. */
export interface VideoPlanSpec {
  prompt: string;
  durationSeconds: number;
  width: number;
  height: number;
  audio: boolean;
  seed: number;
}

/** Files a video plan names: the caption text (written by the runner), the font, the input image, the output. */
export interface VideoPlanFiles {
  textFile: string;
  fontFile: string;
  imageFile?: string;
  output: string;
}

/** An ffmpeg run: its arguments and the caption text to write to `textFile` first. */
export interface RenderPlan {
  args: string[];
  captionText: string;
}

const COMMON_ARGS = ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y'];

/** H.264 mp4 of exactly `durationSeconds`: the prompt over a seeded colour, or a slow zoom over the image. */
export function videoRenderPlan(spec: VideoPlanSpec, files: VideoPlanFiles): RenderPlan {
  const { width, height, durationSeconds, seed } = spec;
  const size = `${width}x${height}`;
  const frames = Math.max(1, Math.round(durationSeconds * FPS));
  const inputs: string[] = [];
  const chain: string[] = [];
  let caption: Caption;
  if (files.imageFile) {
    inputs.push('-i', fileUrl(files.imageFile));
    caption = bottomCaption(spec.prompt, width, height);
    chain.push(
      '[0:v]' + filter('scale', { w: width, h: height, force_original_aspect_ratio: 'increase' }),
      filter('crop', { w: width, h: height }),
      filter('setsar', { r: 1 }),
      // One input picture gives `d` output frames; `on` (output frame number) makes the zoom a steady 15 %.
      filter('zoompan', {
        z: `1+0.15*on/${frames}`,
        x: 'iw/2-(iw/zoom/2)',
        y: 'ih/2-(ih/zoom/2)',
        d: frames,
        s: size,
        fps: FPS,
      }),
      captionFilter(caption, files, `h-text_h-${Math.round(height * 0.06)}`),
    );
  } else {
    caption = centerCaption(spec.prompt, width, height);
    chain.push(
      filter('color', { c: seededColor(seed), s: size, r: FPS }),
      // A gentle bob keeps the picture visibly moving.
      captionFilter(caption, files, `(h-text_h)/2+${Math.round(height * 0.015)}*sin(2*PI*t/4)`),
    );
  }
  const labelSize = Math.max(12, Math.round(Math.min(width, height) / 40));
  chain.push(
    filter('drawtext', {
      fontfile: files.fontFile,
      text: `sandbox · seed ${Math.trunc(seed)} · %{pts:hms}`,
      fontsize: labelSize,
      fontcolor: 'white@0.8',
      x: labelSize,
      y: labelSize,
    }),
    filter('format', { pix_fmts: 'yuv420p' }),
  );
  const graph = [`${chain.join(',')}[v]`];
  const maps = ['-map', '[v]'];
  if (spec.audio) {
    graph.push(
      `${filter('sine', { frequency: toneFrequency(seed), sample_rate: 48000 })},${filter('volume', { volume: 0.08 })}[a]`,
    );
    maps.push('-map', '[a]');
  }
  const args = [
    ...COMMON_ARGS,
    ...inputs,
    '-filter_complex',
    graph.join(';'),
    ...maps,
    '-t',
    String(durationSeconds),
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-crf',
    '26',
    '-pix_fmt',
    'yuv420p',
    '-r',
    String(FPS),
    ...(spec.audio ? ['-c:a', 'aac', '-b:a', '96k', '-ac', '2'] : ['-an']),
    '-movflags',
    '+faststart',
    '-f',
    'mp4',
    fileUrl(files.output),
  ];
  return { args, captionText: caption.text };
}

// ---------------------------------------------------------------------------------------------- images

/** What an image render draws. */
export interface ImagePlanSpec {
  prompt: string;
  width: number;
  height: number;
  count: number;
  seed: number;
}

/** Files an image plan names: the caption text, the font, reference images (edit mode), one output each. */
export interface ImagePlanFiles {
  textFile: string;
  fontFile: string;
  referenceFiles: string[];
  outputs: string[];
}

/** Where reference `index` of `total` goes: a grid above the caption band, cells as square as the frame allows. */
export function referenceCells(
  total: number,
  width: number,
  height: number,
): Array<{ x: number; y: number; width: number; height: number }> {
  const band = Math.round(height * 0.2);
  const pad = Math.round(Math.min(width, height) * 0.03);
  const across = Math.ceil(Math.sqrt(total));
  const down = Math.ceil(total / across);
  // Portrait frames stack references rather than squeezing them side by side.
  const [cols, rows] = width >= height ? [across, down] : [down, across];
  const cellWidth = Math.floor((width - pad * (cols + 1)) / cols);
  const cellHeight = Math.floor((height - band - pad * (rows + 1)) / rows);
  return Array.from({ length: total }, (_, index) => ({
    x: pad + (index % cols) * (cellWidth + pad),
    y: pad + Math.floor(index / cols) * (cellHeight + pad),
    width: cellWidth,
    height: cellHeight,
  }));
}

/** `count` PNGs: the prompt over seeded colours, or (with references) the references composited in a grid. */
export function imageRenderPlan(spec: ImagePlanSpec, files: ImagePlanFiles): RenderPlan {
  const { width, height, count, seed } = spec;
  if (files.outputs.length !== count) throw new RangeError('one output file is needed per image');
  const size = `${width}x${height}`;
  const references = files.referenceFiles;
  const caption =
    references.length > 0
      ? bottomCaption(spec.prompt, width, height)
      : centerCaption(spec.prompt, width, height);
  const captionY = references.length > 0 ? `h-text_h-${Math.round(height * 0.06)}` : '(h-text_h)/2';
  const cells = referenceCells(references.length, width, height);
  const graph: string[] = references.map((_, r) => {
    const cell = cells[r]!;
    const copies = Array.from({ length: count }, (__, i) => `[r${r}_${i}]`).join('');
    return (
      `[${r}:v]` +
      [
        filter('scale', { w: cell.width, h: cell.height, force_original_aspect_ratio: 'decrease' }),
        filter('setsar', { r: 1 }),
        filter('split', { outputs: count }),
      ].join(',') +
      copies
    );
  });
  for (let i = 0; i < count; i += 1) {
    let current = `[bg${i}]`;
    graph.push(`${filter('color', { c: seededColor(seed, i), s: size, r: 1 })}${current}`);
    references.forEach((_, r) => {
      const cell = cells[r]!;
      const next = `[c${i}_${r}]`;
      graph.push(
        `${current}[r${r}_${i}]` +
          filter('overlay', {
            x: `${cell.x}+(${cell.width}-overlay_w)/2`,
            y: `${cell.y}+(${cell.height}-overlay_h)/2`,
            format: 'rgb',
          }) +
          next,
      );
      current = next;
    });
    graph.push(
      `${current}${captionFilter(caption, files, captionY)},${filter('format', { pix_fmts: 'rgb24' })}[o${i}]`,
    );
  }
  const args = [
    ...COMMON_ARGS,
    ...references.flatMap((file) => ['-i', fileUrl(file)]),
    '-filter_complex',
    graph.join(';'),
  ];
  files.outputs.forEach((output, i) => {
    // `-update 1` writes one picture to exactly this name (no `%d` pattern expansion).
    args.push(
      '-map',
      `[o${i}]`,
      '-frames:v',
      '1',
      '-c:v',
      'png',
      '-f',
      'image2',
      '-update',
      '1',
      fileUrl(output),
    );
  });
  return { args, captionText: caption.text };
}
