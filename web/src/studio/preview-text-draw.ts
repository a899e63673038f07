// Draws a text clip on the preview's canvas in its style, position, colour and background (docs/editor.md
// "Text"), where preview-text.ts lays it out, at its opacity. Words go through fillText: user text is drawn
// as text, never read as markup.
import { TEXT_STYLE_DEFAULTS } from '../api-types.ts';
import type { TextLayer } from './preview-frame.ts';
import { layoutPreviewText } from './preview-text.ts';

/** The export draws DejaVu Sans (shipped with the service); the browser uses it when installed. */
const FONT_FAMILY = '"DejaVu Sans", "Verdana", sans-serif';
/** The export's box: 60 % black behind each line. */
const BOX_COLOUR = 'rgba(0, 0, 0, 0.6)';
const DEJAVU_ASCENT_EM = 1901 / 2048;
const DEJAVU_DESCENT_EM = 483 / 2048;

/** Draws `layer` over what the canvas already shows. */
export function drawTextLayer(context: CanvasRenderingContext2D, layer: TextLayer): void {
  const clip = layer.placed.clip;
  if (!clip.text) return;
  const style = clip.style ?? 'title';
  const defaults = TEXT_STYLE_DEFAULTS[style];
  const layout = layoutPreviewText(
    {
      text: clip.text,
      style,
      position: clip.position ?? defaults.position,
      background: clip.background ?? defaults.background,
    },
    { width: context.canvas.width, height: context.canvas.height },
    (text, sizePx) => {
      context.font = `${sizePx}px ${FONT_FAMILY}`;
      return context.measureText(text).width;
    },
  );
  context.save();
  context.globalAlpha = layer.alpha;
  context.font = `${layout.fontSizePx}px ${FONT_FAMILY}`;
  context.textBaseline = 'alphabetic';
  const ascent = DEJAVU_ASCENT_EM * layout.fontSizePx;
  const descent = DEJAVU_DESCENT_EM * layout.fontSizePx;
  layout.lines.forEach((line, i) => {
    if (line === '') return;
    const lineWidth = context.measureText(line).width;
    const x = layout.align === 'center' ? (context.canvas.width - lineWidth) / 2 : layout.leftPx;
    const baseline = layout.baselines[i]!;
    if (layout.boxPaddingPx > 0) {
      const pad = layout.boxPaddingPx;
      context.fillStyle = BOX_COLOUR;
      context.fillRect(x - pad, baseline - ascent - pad, lineWidth + 2 * pad, ascent + descent + 2 * pad);
    }
    context.fillStyle = /^#[0-9a-f]{6}$/i.test(clip.color ?? '') ? clip.color! : '#FFFFFF';
    context.fillText(line, x, baseline);
  });
  context.restore();
}
