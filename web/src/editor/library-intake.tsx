import { useState } from 'preact/hooks';
import { describeError, v1 } from '../api.ts';
import { headerSafe } from '../format.ts';
import {
  PROJECT_NAME_MAX,
  UPLOAD_CONTENT_TYPES,
  type ImportAssetRequest,
  type UploadContentType,
} from '../api-types.ts';
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

/** What the file picker offers: the upload types, and the extensions some browsers give no type. */
const PICKER_ACCEPT = [...UPLOAD_CONTENT_TYPES, '.m4a', '.mov'].join(',');

/**
 * How media get into the library, for every library view alike: upload (drop or pick files) and import by
 * URL, with their progress and errors. `onChanged` asks the page to re-read the project.
 */
export function LibraryIntake(props: { projectId: string; onChanged: () => void }) {
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
    <>
      <div
        class={'dropzone' + (dragging ? ' over' : '')}
        onDragOver={(e) => {
          // Only files are dropped here: a library tile dragged over its own library is not an upload.
          if (!e.dataTransfer?.types.includes('Files')) return;
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
    </>
  );
}
