import { useState } from 'preact/hooks';
import type { Asset, Track } from '../api-types.ts';
import { assetPoster } from '../asset-metadata.ts';
import { assetName, tracksFor } from '../editor/asset-names.ts';
import { LibraryIntake } from '../editor/library-intake.tsx';
import { ASSET_DRAG_TYPE, assetClock, matchesSearch } from './library-tiles.ts';
import './library.css';

/** Places an asset on a track of the video being edited (the page's `onPlace`). */
type PlaceAsset = (asset: Asset, track: Track) => Promise<void>;

/** The track names the chooser shows. */
const TRACK_LABELS: Record<Track, string> = {
  video: 'Video track',
  text: 'Text track',
  voice: 'Voice track',
  sfx: 'Sound effects track',
  music: 'Music track',
};

/** The tile's picture: the poster once the asset has one, else a neutral tile saying what kind it is. */
function TilePicture(props: { asset: Asset; name: string }) {
  const poster = assetPoster(props.asset);
  if (poster)
    return <img class="tile-poster" src={poster} alt={props.name} loading="lazy" draggable={false} />;
  // Audio has no poster, and a picture may still be on its way (asset.updated brings it).
  return (
    <span class="tile-poster tile-blank" aria-hidden="true">
      {props.asset.kind}
    </span>
  );
}

/** "Add to timeline", with a track chooser when the asset fits several tracks. */
function AddToTimeline(props: { asset: Asset; name: string; onPlace: PlaceAsset }) {
  const options = tracksFor(props.asset);
  const [track, setTrack] = useState<Track>(options[0] ?? 'video');
  const [busy, setBusy] = useState(false);
  const chooserId = 'studio-track-' + props.asset.id;
  const chosen = options.includes(track) ? track : (options[0] ?? 'video');
  return (
    <div class="tile-actions">
      {options.length > 1 && (
        <>
          <label for={chooserId} class="sr-only">
            Track for {props.name}
          </label>
          <select id={chooserId} value={chosen} onChange={(e) => setTrack(e.currentTarget.value as Track)}>
            {options.map((t) => (
              <option key={t} value={t}>
                {TRACK_LABELS[t]}
              </option>
            ))}
          </select>
        </>
      )}
      <button
        type="button"
        class="secondary"
        disabled={busy || options.length === 0}
        onClick={async () => {
          setBusy(true);
          try {
            await props.onPlace(props.asset, chosen);
          } finally {
            setBusy(false);
          }
        }}
      >
        Add to timeline
      </button>
    </div>
  );
}

/**
 * One asset as a tile: poster, duration badge, name (cut with an ellipsis, whole in its title and in the
 * tile's accessible name), and the button that adds it; dragged, it carries its id for the timeline's lanes.
 */
function AssetTile(props: { asset: Asset; onPlace: PlaceAsset }) {
  const { asset } = props;
  const name = assetName(asset);
  const clock = assetClock(asset);
  return (
    <li class="tile">
      <div
        role="group"
        aria-label={name}
        class="tile-body"
        draggable
        onDragStart={(e) => {
          if (!e.dataTransfer) return;
          e.dataTransfer.setData(ASSET_DRAG_TYPE, asset.id);
          e.dataTransfer.effectAllowed = 'copy';
        }}
      >
        <div class="tile-frame">
          <TilePicture asset={asset} name={name} />
          {clock && (
            <span class="tile-duration">
              <span class="sr-only">Duration </span>
              {clock}
            </span>
          )}
        </div>
        <span class="tile-name" title={name}>
          {name}
        </span>
        <AddToTimeline asset={asset} name={name} onPlace={props.onPlace} />
      </div>
    </li>
  );
}

/**
 * The studio's media library (docs/dashboard.md): upload and import as before, then a searchable grid of
 * posters with duration badges; each tile is dragged onto a timeline lane or added with its button.
 */
export function LibraryGrid(props: {
  projectId: string;
  assets: Asset[];
  onChanged: () => void;
  onPlace: PlaceAsset;
}) {
  const [query, setQuery] = useState('');
  const shown = props.assets.filter((asset) => matchesSearch(asset, assetName(asset), query));
  return (
    <section class="library" aria-labelledby="library-title">
      <h2 id="library-title">Library</h2>
      <LibraryIntake projectId={props.projectId} onChanged={props.onChanged} />
      {props.assets.length === 0 ? (
        <p class="hint">The library is empty.</p>
      ) : (
        <>
          <div class="field library-search">
            <label for="library-search">Search the library</label>
            <input
              id="library-search"
              type="search"
              value={query}
              onInput={(e) => setQuery(e.currentTarget.value)}
            />
          </div>
          {shown.length === 0 ? (
            <p class="hint">Nothing in the library matches “{query.trim()}”.</p>
          ) : (
            <ul class="library-grid" aria-label="Assets">
              {shown.map((asset) => (
                <AssetTile key={asset.id} asset={asset} onPlace={props.onPlace} />
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}
