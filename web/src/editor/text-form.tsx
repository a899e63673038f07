import { useState } from 'preact/hooks';
import {
  FADE_MAX_SEC,
  TEXT_BACKGROUNDS,
  TEXT_COLOR_DEFAULT,
  TEXT_DURATION_DEFAULT_SEC,
  TEXT_DURATION_MAX_SEC,
  TEXT_DURATION_MIN_SEC,
  TEXT_FADE_DEFAULT_SEC,
  TEXT_MAX_CHARS,
  TEXT_POSITIONS,
  TEXT_STYLES,
  type AddClipRequest,
} from '../api-types.ts';
import { BACKGROUND_OPTIONS, POSITION_OPTIONS, STYLE_OPTIONS } from './clip-looks.ts';
import { ColorField, NumberField, SelectField, TextAreaField, numberOrNull, oneOf } from './fields.tsx';

const BLANK: Record<string, string> = {
  text: '',
  style: 'title',
  position: '',
  color: TEXT_COLOR_DEFAULT.toLowerCase(),
  background: '',
  start: '',
  duration: String(TEXT_DURATION_DEFAULT_SEC),
  fadeIn: '',
  fadeOut: '',
};

/**
 * The form that adds a text clip (a title, lower third or caption; docs/editor.md, Text): the text (line
 * breaks kept), its look, when it shows and its fades. Blank fields take the server's defaults; the page adds
 * the selected video. After a clip is added the text is cleared and the look kept for the next one.
 */
export function TextClipForm(props: { add: (body: AddClipRequest) => Promise<boolean> }) {
  const [values, setValues] = useState(BLANK);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const field = (name: string, label: string) => ({
    id: 'new-text-' + name,
    label,
    value: values[name] ?? '',
    onInput: (value: string) => setValues((old) => ({ ...old, [name]: value })),
  });
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const body: AddClipRequest = { track: 'text', text: values.text ?? '' };
    const style = oneOf(TEXT_STYLES, values.style ?? '');
    if (style) body.style = style;
    const position = oneOf(TEXT_POSITIONS, values.position ?? '');
    if (position) body.position = position;
    const background = oneOf(TEXT_BACKGROUNDS, values.background ?? '');
    if (background) body.background = background;
    if (values.color) body.color = values.color;
    const numbers = [
      ['start', 'start_sec'],
      ['duration', 'duration_sec'],
      ['fadeIn', 'fade_in_sec'],
      ['fadeOut', 'fade_out_sec'],
    ] as const;
    for (const [name, key] of numbers) {
      const n = numberOrNull(values[name] ?? '');
      if (n === undefined) {
        setError('Enter numbers only.');
        return;
      }
      if (n !== null) body[key] = n;
    }
    setBusy(true);
    setError(null);
    try {
      if (await props.add(body)) setValues((old) => ({ ...old, text: '' }));
    } catch (err) {
      setError(err instanceof Error ? err.message : 'The text clip was not added');
    } finally {
      setBusy(false);
    }
  };
  const fade = { min: 0, max: FADE_MAX_SEC, placeholder: String(TEXT_FADE_DEFAULT_SEC) } as const;
  return (
    <form class="clip-form new-text" onSubmit={(e) => void submit(e)} aria-label="New text clip">
      <TextAreaField {...field('text', 'Text')} maxLength={TEXT_MAX_CHARS} required />
      <SelectField {...field('style', 'Style')} options={STYLE_OPTIONS} />
      <SelectField {...field('position', 'Position')} options={POSITION_OPTIONS} />
      <ColorField {...field('color', 'Color')} />
      <SelectField {...field('background', 'Background')} options={BACKGROUND_OPTIONS} />
      <NumberField {...field('start', 'Start (s)')} min={0} placeholder="after previous" />
      <NumberField
        {...field('duration', 'Duration (s)')}
        min={TEXT_DURATION_MIN_SEC}
        max={TEXT_DURATION_MAX_SEC}
      />
      <NumberField {...field('fadeIn', 'Fade in (s)')} {...fade} />
      <NumberField {...field('fadeOut', 'Fade out (s)')} {...fade} />
      <div class="actions">
        <button type="submit" disabled={busy}>
          Add text
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
