// The project's videos as tabs (arrow keys move between them) and the button that adds one.
import type { Video } from '../api-types.ts';

export function VideoTabs(props: {
  videos: Video[];
  selected: string | null;
  onSelect: (id: string) => void;
  onAdd: () => void;
}) {
  return (
    <div class="tabs-row">
      <div role="tablist" aria-label="Videos" class="tabs">
        {props.videos.map((v) => (
          <button
            key={v.id}
            type="button"
            role="tab"
            id={'tab-' + v.id}
            aria-selected={v.id === props.selected}
            aria-controls="video-panel"
            tabIndex={v.id === props.selected ? 0 : -1}
            onClick={() => props.onSelect(v.id)}
            onKeyDown={(e) => {
              if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
              const i = props.videos.findIndex((x) => x.id === props.selected);
              const next =
                props.videos[
                  (i + (e.key === 'ArrowRight' ? 1 : -1) + props.videos.length) % props.videos.length
                ];
              if (next) {
                props.onSelect(next.id);
                document.getElementById('tab-' + next.id)?.focus();
              }
            }}
          >
            {v.name} <span class="hint">{v.aspect_ratio}</span>
          </button>
        ))}
      </div>
      <button type="button" class="secondary" onClick={props.onAdd}>
        New video
      </button>
    </div>
  );
}
