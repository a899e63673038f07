// The studio's inspector: the selected clip's fields (the editor's clip form, docs/dashboard.md "The timeline")
// and the form that adds a text clip.
import { ClipRow, type TimelineActions } from '../editor/timeline.tsx';
import { TextClipForm } from '../editor/text-form.tsx';
import type { PlacedClip } from './placements.ts';

/** The selected clip's form (`count`: how many clips its track has, for Up/Down), or a hint without one. */
export function ClipInspector(props: {
  selected: PlacedClip | undefined;
  count: number;
  actions: TimelineActions;
}) {
  const { selected } = props;
  return (
    <section class="inspector" aria-label="Clip inspector">
      <h2>Clip</h2>
      {selected ? (
        <ol class="clips">
          <ClipRow
            key={selected.clip.id}
            clip={selected.clip}
            asset={selected.asset}
            count={props.count}
            actions={props.actions}
          />
        </ol>
      ) : (
        <p class="hint">Select a clip on the timeline to see its fields.</p>
      )}
      <TextClipForm add={props.actions.add} />
    </section>
  );
}
