// The studio's horizontal timeline (docs/dashboard.md "The timeline"): a ruler, a playhead, zoom,
// one lane per track on one time axis, clips drawn to scale and edited by pointer, keyboard or tap. Every edit
// goes to the page as a history entry (edit-history.ts), which sends it as the REST edit with If-Match.
//
// Dragging is our own small pointer-events layer, not a library: pointer capture delivers the moves and the
// release of one pointer to the element it started on, for mouse, touch and pen alike, which is all a
// horizontal drag needs; a library would add weight to the bundle for nothing more.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Track } from '../api-types.ts';
import type { HistoryEntry } from './edit-history.ts';
import { ClipPicture } from './clip-pictures.tsx';
import type { PlacedClip } from './placements.ts';
import {
  LANES,
  LANE_NAMES,
  clampZoom,
  clipLabel,
  keyCommand,
  laneClips,
  pxPerSecAt,
  rulerStepSec,
  secToPx,
  stepPlayhead,
  type AssetNamer,
} from './timeline-model.ts';
import {
  deleteClipEntry,
  dragEntry,
  dropEntry,
  moveStepEntry,
  splitAtEntry,
  splitTarget,
  trimStepEntry,
  type DragMode,
} from './timeline-gestures.ts';
import './timeline.css';

/** The dataTransfer type the library sets to an asset's id when it is dragged. */
export const ASSET_DRAG_TYPE = 'application/x-mediaforge-asset';
/** A pointer that moves less than this is a tap (it selects), not a drag. */
const TAP_PX = 4;
/** Room after the last clip, so a clip can be dragged or dropped past it. */
const TAIL_SEC = 5;

/** What the timeline needs from the page, which owns the playhead, the selection and the history. */
export interface TimelineViewProps {
  placed: PlacedClip[];
  lengthSec: number;
  videoId: string | null;
  nameOf: AssetNamer;
  timeSec: number;
  onSeek: (sec: number) => void;
  onPlayPause: () => void;
  selectedId: string | null;
  onSelect: (clipId: string | null) => void;
  /** The clip whose edit is on its way, and whether it was saved. */
  saving: { clipId: string; state: 'saving' | 'saved' } | null;
  /** Makes an edit; the page sends it and records it for undo. */
  onEdit: (entry: HistoryEntry, clipId: string | null) => void;
  canUndo: boolean;
  canRedo: boolean;
  onUndo: () => void;
  onRedo: () => void;
}

interface Drag {
  clipId: string;
  mode: DragMode;
  pointerId: number;
  startX: number;
  dx: number;
}

export function TimelineView(props: TimelineViewProps) {
  const { placed, timeSec } = props;
  const [zoom, setZoom] = useState(3);
  const [drag, setDrag] = useState<Drag | null>(null);
  const scroller = useRef<HTMLDivElement>(null);
  const pxPerSec = pxPerSecAt(zoom);
  const widthPx = secToPx(Math.max(props.lengthSec, timeSec) + TAIL_SEC, pxPerSec);
  const selected = placed.find((p) => p.clip.id === props.selectedId);
  const byId = (id: string | undefined) => placed.find((p) => p.clip.id === id);

  const edit = (entry: HistoryEntry | null, clipId: string | null): void => {
    if (entry) props.onEdit(entry, clipId);
  };
  /** The time under a pointer at `clientX`, on the one axis every lane shares. */
  const timeAt = (clientX: number): number => {
    const box = scroller.current?.getBoundingClientRect();
    const scrolled = scroller.current?.scrollLeft ?? 0;
    return Math.max(0, (clientX - (box?.left ?? 0) + scrolled) / pxPerSec);
  };

  const split = (target: PlacedClip | undefined): void =>
    edit(target ? splitAtEntry(target, timeSec) : null, target?.clip.id ?? null);

  const onKeyDown = (event: KeyboardEvent): void => {
    const target = event.target as HTMLElement;
    if (target.closest('input, select, textarea')) return;
    const clip = byId(target.dataset.clipId);
    const command = keyCommand(event, clip !== undefined);
    if (!command || command.kind === 'undo' || command.kind === 'redo') return;
    // Space and arrows on a toolbar button keep their own meaning (press it, move on).
    if (!clip && target.tagName === 'BUTTON' && (command.kind === 'play-pause' || command.kind === 'step'))
      return;
    event.preventDefault();
    switch (command.kind) {
      case 'move':
        if (clip) edit(moveStepEntry(placed, clip, command.direction), clip.clip.id);
        break;
      case 'trim-end':
        if (clip) edit(trimStepEntry(clip, command.direction), clip.clip.id);
        break;
      case 'split':
        split(clip);
        break;
      case 'delete':
        if (clip) edit(deleteClipEntry(clip), null);
        break;
      case 'step':
        props.onSeek(stepPlayhead(timeSec, command.frames, props.lengthSec));
        break;
      case 'play-pause':
        props.onPlayPause();
        break;
    }
  };

  // Ctrl+Z and Ctrl+Shift+Z work wherever the focus is but in a field (whose own undo they are): the Undo
  // button, disabled by its last undo, drops the focus to the page's body.
  const undoRedo = useRef({ undo: props.onUndo, redo: props.onRedo });
  undoRedo.current = { undo: props.onUndo, redo: props.onRedo };
  useEffect(() => {
    const onDocumentKey = (event: KeyboardEvent): void => {
      const target = event.target as HTMLElement | null;
      if (event.defaultPrevented || target?.closest('input, select, textarea, [contenteditable]')) return;
      const command = keyCommand(event, false);
      if (command?.kind !== 'undo' && command?.kind !== 'redo') return;
      event.preventDefault();
      undoRedo.current[command.kind]();
    };
    document.addEventListener('keydown', onDocumentKey);
    return () => document.removeEventListener('keydown', onDocumentKey);
  }, []);

  const startDrag = (event: PointerEvent, placedClip: PlacedClip): void => {
    if (event.button !== 0) return;
    // The clip's edges are its own spans: grabbing one trims, grabbing the rest moves.
    const edge = (event.target as HTMLElement).dataset.edge;
    const mode: DragMode = edge === 'trim-start' || edge === 'trim-end' ? edge : 'move';
    (event.currentTarget as HTMLElement).setPointerCapture(event.pointerId);
    setDrag({ clipId: placedClip.clip.id, mode, pointerId: event.pointerId, startX: event.clientX, dx: 0 });
  };
  const moveDrag = (event: PointerEvent): void => {
    if (drag && event.pointerId === drag.pointerId) setDrag({ ...drag, dx: event.clientX - drag.startX });
  };
  const endDrag = (event: PointerEvent, cancelled: boolean): void => {
    if (!drag || event.pointerId !== drag.pointerId) return;
    setDrag(null);
    const clip = byId(drag.clipId);
    if (!clip || cancelled) return;
    if (Math.abs(drag.dx) < TAP_PX) {
      props.onSelect(clip.clip.id);
      return;
    }
    props.onSelect(clip.clip.id);
    edit(dragEntry(placed, clip, drag.mode, drag.dx, pxPerSec, timeSec), clip.clip.id);
  };
  /** The box of a clip, moved or resized by the drag in progress so the hand sees what it does. */
  const boxOf = (p: PlacedClip): { left: number; width: number } => {
    let left = secToPx(p.startSec, pxPerSec);
    let width = secToPx(p.endSec - p.startSec, pxPerSec);
    if (drag?.clipId === p.clip.id) {
      if (drag.mode === 'move') left += drag.dx;
      else if (drag.mode === 'trim-start') {
        left += drag.dx;
        width -= drag.dx;
      } else width += drag.dx;
    }
    return { left, width: Math.max(4, width) };
  };

  const onDrop = (event: DragEvent, track: Track): void => {
    const assetId = event.dataTransfer?.getData(ASSET_DRAG_TYPE);
    if (!assetId) return;
    event.preventDefault();
    edit(dropEntry(placed, track, assetId, props.videoId, timeAt(event.clientX)), null);
  };
  const acceptsAsset = (event: DragEvent): void => {
    if (event.dataTransfer?.types.includes(ASSET_DRAG_TYPE)) {
      event.preventDefault();
      event.dataTransfer.dropEffect = 'copy';
    }
  };

  const step = rulerStepSec(pxPerSec);
  const ticks = Array.from({ length: Math.floor(widthPx / pxPerSec / step) + 1 }, (_, i) => i * step);

  return (
    <section class="studio-timeline" aria-label="Timeline" onKeyDown={onKeyDown}>
      <div class="tl-toolbar">
        <button type="button" onClick={props.onUndo} disabled={!props.canUndo}>
          Undo
        </button>
        <button type="button" onClick={props.onRedo} disabled={!props.canRedo}>
          Redo
        </button>
        <button type="button" onClick={() => split(splitTarget(placed, selected, timeSec))}>
          Split
        </button>
        <button type="button" onClick={() => setZoom((z) => clampZoom(z + 1))} disabled={zoom >= 5}>
          Zoom in
        </button>
        <button type="button" onClick={() => setZoom((z) => clampZoom(z - 1))} disabled={zoom <= 0}>
          Zoom out
        </button>
        <span class="tl-time" aria-live="off">
          {timeSec.toFixed(2)} s
        </span>
      </div>
      {selected && (
        <div class="tl-toolbar tl-clip-actions" role="toolbar" aria-label="Selected clip">
          <button type="button" onClick={() => edit(moveStepEntry(placed, selected, -1), selected.clip.id)}>
            Move left
          </button>
          <button type="button" onClick={() => edit(moveStepEntry(placed, selected, 1), selected.clip.id)}>
            Move right
          </button>
          <button type="button" onClick={() => edit(trimStepEntry(selected, -1), selected.clip.id)}>
            Shorten
          </button>
          <button type="button" onClick={() => edit(trimStepEntry(selected, 1), selected.clip.id)}>
            Lengthen
          </button>
          <button type="button" class="danger" onClick={() => edit(deleteClipEntry(selected), null)}>
            Delete
          </button>
        </div>
      )}
      <div class="tl-scroll" ref={scroller}>
        <div class="tl-body" style={{ width: `${widthPx}px` }}>
          <div
            class="tl-ruler"
            aria-hidden="true"
            onClick={(event) => props.onSeek(Math.min(props.lengthSec, timeAt(event.clientX)))}
          >
            {ticks.map((sec) => (
              <span key={sec} class="tl-tick" style={{ left: `${secToPx(sec, pxPerSec)}px` }}>
                {sec} s
              </span>
            ))}
          </div>
          {LANES.map((track) => {
            const clips = laneClips(placed, track);
            return (
              <div
                key={track}
                role="group"
                aria-label={LANE_NAMES[track]}
                class={'tl-lane tl-lane-' + track}
                onDragOver={acceptsAsset}
                onDrop={(event) => onDrop(event, track)}
              >
                <span class="tl-lane-name" aria-hidden="true">
                  {LANE_NAMES[track]}
                </span>
                {clips.map((p, i) => {
                  const box = boxOf(p);
                  const saving = props.saving?.clipId === p.clip.id ? props.saving.state : null;
                  return (
                    <div
                      key={p.clip.id}
                      role="button"
                      tabIndex={0}
                      data-clip-id={p.clip.id}
                      aria-label={clipLabel(p, i + 1, props.nameOf)}
                      aria-pressed={p.clip.id === props.selectedId}
                      class={
                        'tl-clip' +
                        (p.clip.id === props.selectedId ? ' selected' : '') +
                        (drag?.clipId === p.clip.id ? ' dragging' : '') +
                        (saving ? ' ' + saving : '')
                      }
                      style={{ left: `${box.left}px`, width: `${box.width}px` }}
                      onFocus={() => props.onSelect(p.clip.id)}
                      onPointerDown={(event) => startDrag(event, p)}
                      onPointerMove={moveDrag}
                      onPointerUp={(event) => endDrag(event, false)}
                      onPointerCancel={(event) => endDrag(event, true)}
                    >
                      <ClipPicture placed={p} widthPx={box.width} />
                      {p.overlapSec > 0 && (
                        <span
                          class="tl-overlap"
                          aria-hidden="true"
                          style={{ width: `${secToPx(p.overlapSec, pxPerSec)}px` }}
                        />
                      )}
                      {saving && (
                        <span class="tl-saving" aria-hidden="true">
                          {saving === 'saving' ? 'saving…' : 'saved'}
                        </span>
                      )}
                      {(['trim-start', 'trim-end'] as const).map((mode) => (
                        <span key={mode} class={'tl-edge tl-' + mode} data-edge={mode} aria-hidden="true" />
                      ))}
                    </div>
                  );
                })}
              </div>
            );
          })}
          <div class="tl-playhead" aria-hidden="true" style={{ left: `${secToPx(timeSec, pxPerSec)}px` }} />
        </div>
      </div>
    </section>
  );
}
