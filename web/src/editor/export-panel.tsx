import { useState } from 'preact/hooks';
import { formatDate, formatSeconds } from '../format.ts';
import { EXPORT_QUALITIES, type Asset, type ExportFit, type ExportQuality } from '../api-types.ts';
import { assetNumber, assetText } from '../asset-metadata.ts';
import { ErrorText } from '../ui.tsx';

/** An export of the selected video in progress, from its POST and the export.* events. */
export interface ExportRun {
  running: boolean;
  fraction: number | null;
  error: string | null;
}

const QUALITY_WORDS: Record<ExportQuality, string> = {
  final: 'final (full size)',
  preview: 'preview (360p, fast)',
};

/**
 * The player of the video's latest export, the Export button with its fit and quality (a `preview` is a quick
 * 360p look at a change, docs/editor.md "Previews"), and the export's live progress.
 */
export function ExportPanel(props: {
  latest: Asset | undefined;
  run: ExportRun;
  canExport: boolean;
  onExport: (fit: ExportFit, quality: ExportQuality) => void;
  /** The `Fit` chosen, when the page holds it (the preview player places pictures by it too). */
  fit?: ExportFit;
  onFitChange?: (fit: ExportFit) => void;
}) {
  const [ownFit, setOwnFit] = useState<ExportFit>('fit');
  const fit = props.fit ?? ownFit;
  const setFit = (value: ExportFit) => {
    setOwnFit(value);
    props.onFitChange?.(value);
  };
  const [quality, setQuality] = useState<ExportQuality>('final');
  const { latest, run } = props;
  return (
    <section class="export" aria-labelledby="export-title">
      <h2 id="export-title">Preview and export</h2>
      {latest ? (
        <figure>
          <video
            key={latest.url}
            src={latest.url}
            controls
            preload="metadata"
            playsInline
            aria-label="Latest export"
          />
          <figcaption class="hint">
            {assetText(latest, 'quality') === 'preview' ? 'Preview exported' : 'Exported'}{' '}
            {formatDate(latest.created_at)} · {formatSeconds(assetNumber(latest, 'duration_sec'))} ·{' '}
            <a href={latest.url} download>
              Download
            </a>
          </figcaption>
        </figure>
      ) : (
        <p class="hint">No export of this video yet.</p>
      )}
      <div class="toolbar">
        <div class="field">
          <label for="export-fit">Fit</label>
          <select
            id="export-fit"
            value={fit}
            onChange={(e) => setFit(e.currentTarget.value === 'fill' ? 'fill' : 'fit')}
          >
            <option value="fit">fit (black bars)</option>
            <option value="fill">fill (crop)</option>
          </select>
        </div>
        <div class="field">
          <label for="export-quality">Quality</label>
          <select
            id="export-quality"
            value={quality}
            onChange={(e) => setQuality(e.currentTarget.value === 'preview' ? 'preview' : 'final')}
          >
            {EXPORT_QUALITIES.map((q) => (
              <option key={q} value={q}>
                {QUALITY_WORDS[q]}
              </option>
            ))}
          </select>
        </div>
        <button type="button" disabled={run.running} onClick={() => props.onExport(fit, quality)}>
          Export
        </button>
      </div>
      {!props.canExport && <p class="hint">Put a clip on the video track to export.</p>}
      {run.running && (
        <div class="progress">
          <label for="export-progress">Export progress</label>
          <progress id="export-progress" max={1} value={run.fraction ?? undefined} />
          <span role="status">
            {run.fraction !== null ? `${Math.round(run.fraction * 100)}%` : 'Starting…'}
          </span>
        </div>
      )}
      <ErrorText error={run.error} />
    </section>
  );
}
