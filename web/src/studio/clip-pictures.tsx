// What a clip shows inside its box on the timeline: a video's filmstrip, an image's picture, a sound's
// waveform, a text clip's text (docs/editor.md "Pictures of assets"). All decorative: the clip's button carries
// its accessible name.
import { useEffect, useRef, useState } from 'preact/hooks';
import { assetNumber, assetPoster, assetText } from '../asset-metadata.ts';
import { filmstripRange } from './filmstrip-range.ts';
import type { PlacedClip } from './placements.ts';

/** `metadata.waveform_url`'s JSON. */
interface Peaks {
  peaks_per_second: number;
  peaks: number[];
}

// One fetch per waveform: the files are immutable (their ids change with their content). The page may
// show many projects in its life: past PEAKS_KEPT the waveform fetched longest ago is forgotten.
const peaksCache = new Map<string, Promise<Peaks | null>>();
const PEAKS_KEPT = 200;

function loadPeaks(url: string): Promise<Peaks | null> {
  let pending = peaksCache.get(url);
  if (!pending) {
    pending = fetch(url)
      .then((r) => (r.ok ? (r.json() as Promise<unknown>) : null))
      .then((body) => {
        const value = body as Partial<Peaks> | null;
        return value && typeof value.peaks_per_second === 'number' && Array.isArray(value.peaks)
          ? {
              peaks_per_second: value.peaks_per_second,
              peaks: value.peaks.filter((p) => typeof p === 'number'),
            }
          : null;
      })
      .catch(() => null);
    peaksCache.set(url, pending);
    if (peaksCache.size > PEAKS_KEPT) peaksCache.delete(peaksCache.keys().next().value!);
  }
  return pending;
}

/** The part of the sound the clip plays, drawn as bars on a small canvas as wide as the clip. */
function Waveform(props: { url: string; fromSec: number; toSec: number; widthPx: number }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [peaks, setPeaks] = useState<Peaks | null>(null);
  useEffect(() => {
    let live = true;
    void loadPeaks(props.url).then((p) => live && setPeaks(p));
    return () => {
      live = false;
    };
  }, [props.url]);
  const width = Math.max(1, Math.min(4000, Math.round(props.widthPx)));
  const height = 32;
  useEffect(() => {
    const context = canvas.current?.getContext('2d');
    if (!context || !peaks) return;
    context.clearRect(0, 0, width, height);
    context.fillStyle = '#1a7f37';
    const first = props.fromSec * peaks.peaks_per_second;
    const perPx = ((props.toSec - props.fromSec) * peaks.peaks_per_second) / width;
    for (let x = 0; x < width; x += 2) {
      const peak = peaks.peaks[Math.floor(first + x * perPx)] ?? 0;
      const bar = Math.max(1, peak * height);
      context.fillRect(x, (height - bar) / 2, 1, bar);
    }
  }, [peaks, width, props.fromSec, props.toSec]);
  return <canvas ref={canvas} class="tl-waveform" width={width} height={height} aria-hidden="true" />;
}

/** The inside of a clip's box at `widthPx` wide. */
export function ClipPicture(props: { placed: PlacedClip; widthPx: number }) {
  const { clip, asset } = props.placed;
  if (clip.track === 'text') return <span class="tl-text">{clip.text ?? ''}</span>;
  if (!asset) return null;
  if (clip.track === 'video') {
    const filmstrip = assetText(asset, 'filmstrip_url');
    if (asset.kind === 'video' && filmstrip) {
      // The sprite's frames are equal slices of the video in one row: the part the clip plays is stretched
      // over the box, each frame over its own part of time (filmstrip-range.ts). An object style is applied
      // through CSSOM, which the CSP allows.
      const range = filmstripRange(props.placed);
      return (
        <div
          class="tl-filmstrip"
          aria-hidden="true"
          style={{
            backgroundImage: `url(${JSON.stringify(filmstrip)})`,
            backgroundSize: range.size,
            backgroundPosition: range.position,
          }}
        />
      );
    }
    const picture = assetPoster(asset) ?? (asset.kind === 'image' ? asset.url : undefined);
    return picture ? <img class="tl-picture" src={picture} alt="" draggable={false} /> : null;
  }
  const waveform = assetText(asset, 'waveform_url');
  if (!waveform) return null;
  const fromSec = clip.trim_start_sec ?? 0;
  const playedSec = (props.placed.endSec - props.placed.startSec) * (clip.speed ?? 1);
  const length = assetNumber(asset, 'duration_sec');
  return (
    <Waveform
      url={waveform}
      fromSec={fromSec}
      toSec={length === undefined ? fromSec + playedSec : Math.min(length, fromSec + playedSec)}
      widthPx={props.widthPx}
    />
  );
}
