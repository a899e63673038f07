import { useState } from 'preact/hooks';
import { describeError, v1 } from '../api.ts';
import { formatSeconds, headerSafe } from '../format.ts';
import {
  PROJECT_NAME_MAX,
  TRACKS,
  UPLOAD_CONTENT_TYPES,
  trackAccepts,
  type Asset,
  type ImportAssetRequest,
  type Track,
  type UploadContentType,
} from '../api-types.ts';
import { assetNumber, assetText } from '../asset-metadata.ts';
import { ErrorText, formValue, Notice } from '../ui.tsx';

/** The upload types by file extension, for files the browser gives no (or another) type. */
const UPLOAD_TYPES: Record<string, UploadContentType> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  mov: 'video/quicktime',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  m4a: 'audio/mp4',
};

/** The upload's Content-Type: the browser's when the service takes it, else one guessed from the extension. */
function uploadType(file: File): string {
  if ((UPLOAD_CONTENT_TYPES as readonly string[]).includes(file.type)) return file.type;
  const ext = file.name.split('.').pop()?.toLowerCase() ?? '';
  return UPLOAD_TYPES[ext] ?? (file.type || 'application/octet-stream');
}

/** The tracks an asset can go on (docs/editor.md, POST /clips). */
function tracksFor(asset: Asset): Track[] {
  return TRACKS.filter((track) => trackAccepts(track, asset.kind));
}

/** What the file picker offers: the upload types, and the extensions some browsers give no type. */
const PICKER_ACCEPT = [...UPLOAD_CONTENT_TYPES, '.m4a', '.mov'].join(',');

/** A short human name of an asset. */
export function assetName(asset: Asset | undefined): string {
  if (!asset) return 'Missing asset';
  return assetText(asset, 'name') || assetText(asset, 'prompt')?.slice(0, 60) || `${asset.kind} ${asset.id}`;
}

/** A small preview of an asset: picture, player or sound. */
export function AssetThumb(props: { asset: Asset }) {
  const { asset } = props;
  if (asset.kind === 'image')
    return <img class="thumb" src={asset.url} alt={assetName(asset)} loading="lazy" />;
  if (asset.kind === 'video')
    return (
      <video
        class="thumb"
        src={asset.url}
        controls
        preload="metadata"
        playsInline
        aria-label={assetName(asset)}
      />
    );
  return <audio src={asset.url} controls preload="none" aria-label={assetName(asset)} />;
}

function AssetCard(props: { asset: Asset; onPlace: (asset: Asset, track: Track) => Promise<void> }) {
  const { asset } = props;
  const options = tracksFor(asset);
  const [track, setTrack] = useState<Track>(options[0] ?? 'video');
  const [busy, setBusy] = useState(false);
  const id = 'place-' + asset.id;
  return (
    <li class="asset">
      <AssetThumb asset={asset} />
      <div class="asset-info">
        <strong>{assetName(asset)}</strong>
        <span class="hint">
          {asset.kind} · {asset.source}
          {assetNumber(asset, 'duration_sec') !== undefined
            ? ` · ${formatSeconds(assetNumber(asset, 'duration_sec'))}`
            : ''}
        </span>
        <code class="hint">{asset.id}</code>
        <div class="inline">
          <label for={id} class="sr-only">
            Track for {assetName(asset)}
          </label>
          <select id={id} value={track} onChange={(e) => setTrack(e.currentTarget.value as Track)}>
            {options.map((t) => (
              <option key={t} value={t}>
                {t} track
              </option>
            ))}
          </select>
          <button
            type="button"
            class="secondary"
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              try {
                await props.onPlace(asset, track);
              } finally {
                setBusy(false);
              }
            }}
          >
            Add to track
          </button>
        </div>
      </div>
    </li>
  );
}

/** The project's media library: upload (drop or pick files), import by URL, place an asset on a track. */
export function Library(props: {
  projectId: string;
  assets: Asset[];
  onChanged: () => void;
  onPlace: (asset: Asset, track: Track) => Promise<void>;
}) {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const base = '/media-studio/projects/' + encodeURIComponent(props.projectId) + '/assets';

  const upload = async (files: FileList | File[] | null): Promise<void> => {
    const list = files ? Array.from(files) : [];
    if (list.length === 0) return;
    setError(null);
    setNotice(null);
    let done = 0;
    for (const file of list) {
      setBusy(`Uploading ${file.name}…`);
      try {
        await v1('POST', base, {
          body: file,
          headers: { 'content-type': uploadType(file), 'x-asset-name': headerSafe(file.name) },
        });
        done++;
      } catch (err) {
        setError(`${file.name}: ${describeError(err)}`);
      }
    }
    setBusy(null);
    if (done > 0) {
      setNotice(done === 1 ? 'Uploaded 1 file.' : `Uploaded ${done} files.`);
      props.onChanged();
    }
  };

  const importUrl = async (event: Event): Promise<void> => {
    event.preventDefault();
    const body: ImportAssetRequest = { url: formValue(event, 'url').trim() };
    const typedName = formValue(event, 'name').trim();
    if (typedName) body.name = typedName;
    setError(null);
    setNotice(null);
    setBusy('Importing…');
    try {
      await v1('POST', base, { json: body });
      setUrl('');
      setName('');
      setNotice('Imported.');
      props.onChanged();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(null);
    }
  };

  return (
    <section class="library" aria-labelledby="library-title">
      <h2 id="library-title">Library</h2>
      <div
        class={'dropzone' + (dragging ? ' over' : '')}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          void upload(e.dataTransfer?.files ?? null);
        }}
      >
        <p>Drop images, videos or audio files here, or choose them:</p>
        <label for="upload-files">Upload files</label>
        <input
          id="upload-files"
          type="file"
          multiple
          accept={PICKER_ACCEPT}
          onChange={(e) => {
            const input = e.currentTarget;
            void upload(input.files).then(() => {
              input.value = '';
            });
          }}
        />
      </div>
      <form class="import" onSubmit={importUrl}>
        <div class="field">
          <label for="import-url">Media URL</label>
          <input
            id="import-url"
            name="url"
            type="url"
            required
            placeholder="https://…"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="import-name">Asset name (optional)</label>
          <input
            id="import-name"
            name="name"
            type="text"
            maxLength={PROJECT_NAME_MAX}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </div>
        <button type="submit" class="secondary" disabled={busy !== null}>
          Import
        </button>
      </form>
      <Notice text={busy ?? notice} />
      <ErrorText error={error} />
      {props.assets.length === 0 ? (
        <p class="hint">The library is empty.</p>
      ) : (
        <ul class="assets">
          {props.assets.map((a) => (
            <AssetCard key={a.id} asset={a} onPlace={props.onPlace} />
          ))}
        </ul>
      )}
    </section>
  );
}
