import { useState } from 'preact/hooks';
import { formatDate, formatSeconds } from '../format.ts';
import type { Asset, ExportFit } from '../api-types.ts';
import { assetNumber } from '../asset-metadata.ts';
import { ErrorText } from '../ui.tsx';

/** An export of the selected video in progress, from its POST and the export.* events. */
export interface ExportRun {
  running: boolean;
  fraction: number | null;
  error: string | null;
}

/** The preview of the video's latest export, the Export button and its live progress. */
export function ExportPanel(props: {
  latest: Asset | undefined;
  run: ExportRun;
  canExport: boolean;
  onExport: (fit: ExportFit) => void;
}) {
  const [fit, setFit] = useState<ExportFit>('fit');
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
            Exported {formatDate(latest.created_at)} · {formatSeconds(assetNumber(latest, 'duration_sec'))} ·{' '}
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
        <button type="button" disabled={run.running} onClick={() => props.onExport(fit)}>
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
