import { useEffect, useState } from 'preact/hooks';

// The labelled fields of the timeline's forms: every field has a visible label tied to it by `for`/`id`
// (browser tests and screen readers find fields by label, docs/dashboard.md "Accessible names").

/** A typed number, null for a blank field, undefined for something that is not a number. */
export function numberOrNull(text: string): number | null | undefined {
  const t = text.trim();
  if (t === '') return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : undefined;
}

/** `value` when it is one of `choices`, else undefined. */
export function oneOf<T extends string>(choices: readonly T[], value: string): T | undefined {
  return (choices as readonly string[]).includes(value) ? (value as T) : undefined;
}

/**
 * A form's typed values, reset to `values` whenever those change (a live update or a reload of the clip):
 * what the person typed stays until the clip itself changes.
 */
export function useDraft(
  values: Record<string, string>,
): [Record<string, string>, (name: string, value: string) => void] {
  const key = JSON.stringify(values);
  const [draft, setDraft] = useState(values);
  useEffect(() => setDraft(values), [key]);
  return [draft, (name, value) => setDraft((old) => ({ ...old, [name]: value }))];
}

interface FieldProps {
  id: string;
  label: string;
  value: string;
  onInput: (value: string) => void;
}

export function NumberField(
  props: FieldProps & {
    min?: number;
    max?: number;
    step?: number | 'any';
    placeholder?: string;
    disabled?: boolean;
  },
) {
  return (
    <div class="field small">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        type="number"
        min={props.min}
        max={props.max}
        step={props.step ?? 'any'}
        placeholder={props.placeholder}
        disabled={props.disabled}
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
    </div>
  );
}

/** A choice among `options` (`[value, shown text]`). */
export function SelectField(props: FieldProps & { options: readonly (readonly [string, string])[] }) {
  return (
    <div class="field small">
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={(e) => props.onInput(e.currentTarget.value)}>
        {props.options.map(([value, shown]) => (
          <option key={value} value={value}>
            {shown}
          </option>
        ))}
      </select>
    </div>
  );
}

/** Several lines of text, at most `maxLength` characters. */
export function TextAreaField(props: FieldProps & { maxLength: number; required?: boolean }) {
  return (
    <div class="field wide">
      <label for={props.id}>{props.label}</label>
      <textarea
        id={props.id}
        rows={2}
        maxLength={props.maxLength}
        required={props.required}
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
    </div>
  );
}

/** A `#RRGGBB` colour (the browser's colour picker). */
export function ColorField(props: FieldProps) {
  return (
    <div class="field small">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        type="color"
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
      />
    </div>
  );
}
