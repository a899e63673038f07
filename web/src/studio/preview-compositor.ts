// Draws a FrameView (preview-frame.ts) on the preview's canvas: video clips from hidden <video> elements (one
// per asset, seeked to the frame's source time while paused, played at the clip's speed and pulled back when
// they drift while playing), images (the asset's poster, else its file) with their motion window, the
// transition as the export's xfade draws it (preview-transitions.ts), the first clip's fade from black, then
// the text clips on top (preview-text-draw.ts). Each clip is placed in the frame as the export's `fit` or
// `fill` places it (preview-placement.ts), then seen through its motion window, as the export moves a still
// after placing it. Words are drawn with fillText: user text is never markup.
import type { Asset, ExportFit } from '../api-types.ts';
import { assetPoster } from '../asset-metadata.ts';
import { PREVIEW_FPS, type ClipLayer, type FrameView } from './preview-frame.ts';
import { placedRect } from './preview-placement.ts';
import { drawTextLayer } from './preview-text-draw.ts';
import { transitionLook } from './preview-transitions.ts';
import { VideoFrameRelay } from './preview-video-frames.ts';

/**
 * While playing, a video more than this far from where it should be is seeked there (seconds). Seeking is
 * dear — a file with few keyframes decodes from the last one — so a smaller drift is made up by its pace.
 */
const DRIFT_SEC = 0.5;
/** A drift under this (a frame and a half) is left alone; above, the pace is nudged by up to NUDGE_MAX. */
const NUDGE_FROM_SEC = 1.5 / 30;
const NUDGE_MAX = 0.1;
/** While paused, a video further than half a frame from its frame is seeked to it. */
const SEEK_TOLERANCE_SEC = 0.5 / 30;
/** Seek a hair past the frame's time so that the frame starting exactly there is the one shown. */
const SEEK_NUDGE_SEC = 0.001;

type Drawable = HTMLVideoElement | HTMLImageElement;

/** Stops a hidden video element, drops its media (and decoder) and takes it out of the page. */
function release(video: HTMLVideoElement): void {
  video.pause();
  video.removeAttribute('src');
  video.load();
  video.remove();
}

/** The pace factor that makes up `drift` seconds (ahead > 0) within about a second, in steps of 2.5 %. */
function nudge(drift: number): number {
  if (Math.abs(drift) < NUDGE_FROM_SEC) return 1;
  const step = Math.round(Math.min(NUDGE_MAX, Math.abs(drift)) / 0.025) * 0.025;
  return drift > 0 ? 1 - step : 1 + step;
}

export class PreviewCompositor {
  private readonly context: CanvasRenderingContext2D;
  private readonly scratch: [CanvasRenderingContext2D, CanvasRenderingContext2D];
  private readonly videos = new Map<string, HTMLVideoElement>();
  private readonly images = new Map<string, HTMLImageElement>();
  /** How pictures of another shape are placed: the export panel's `Fit` (docs/dashboard.md). */
  fit: ExportFit = 'fit';
  /**
   * While playing, a frame is drawn again only when it could look different: another frame of the timeline
   * (30 a second) or a new picture from a video (counted by requestVideoFrameCallback). Drawing a decoded
   * video frame is the dearest thing the preview does (its colours converted and scaled on the CPU), and the
   * animation loop runs at the screen's rate, often twice the video's.
   */
  private drawnFrame = -1;
  private drawnVideoFrames = 0;
  private videoFrames = 0;
  /** The videos the last frame showed, and those started ahead of their cut (see preroll). */
  private shown = new Set<HTMLVideoElement>();
  private readonly waiting = new Set<HTMLVideoElement>();
  /** While playing, videos' frames are drawn from pictures a worker made (preview-video-frames.ts). */
  private readonly relay: VideoFrameRelay | null = VideoFrameRelay.supported
    ? new VideoFrameRelay(() => this.videoFrames++)
    : null;

  /**
   * `host` keeps the hidden video elements (in the page, so that the browser keeps decoding them);
   * `onMediaReady` asks for a redraw when a picture has loaded or a seek has landed.
   */
  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly host: HTMLElement,
    private readonly onMediaReady: () => void,
  ) {
    const context = canvas.getContext('2d');
    if (!context) throw new Error('no 2D canvas');
    this.context = context;
    const scratch = () => document.createElement('canvas').getContext('2d')!;
    this.scratch = [scratch(), scratch()];
  }

  /**
   * The hidden element of a video asset. `second` is a second element of the same asset, for a transition
   * between two clips of one file (each shows its own time).
   */
  private video(asset: Asset, second = false): HTMLVideoElement {
    const key = second ? `${asset.id} second` : asset.id;
    let video = this.videos.get(key);
    if (!video) {
      video = document.createElement('video');
      video.className = 'preview-source';
      // The mixer plays the sound; the element gives pictures only.
      video.muted = true;
      video.playsInline = true;
      video.preload = 'auto';
      video.addEventListener('seeked', this.onMediaReady);
      video.addEventListener('loadeddata', this.onMediaReady);
      const counted = video;
      const onFrame = () => {
        // A playing video's frame is drawn once its picture comes (which counts it); a paused one's at once.
        if (this.relay && !counted.paused) this.relay.send(counted, ...this.placedSize(counted));
        else this.videoFrames++;
        counted.requestVideoFrameCallback(onFrame);
      };
      counted.requestVideoFrameCallback(onFrame);
      video.src = asset.url;
      this.host.append(video);
      this.videos.set(key, video);
    }
    return video;
  }

  private image(asset: Asset): HTMLImageElement {
    let image = this.images.get(asset.id);
    if (!image) {
      image = new Image();
      image.addEventListener('load', this.onMediaReady);
      image.src = assetPoster(asset) ?? asset.url;
      this.images.set(asset.id, image);
    }
    return image;
  }

  /**
   * Loads the pictures of `assets` ahead of their clips (so that a cut does not wait for a download), and lets
   * go of those of assets no longer among them: the elements kept are bounded by the video's assets.
   */
  prepare(assets: readonly Asset[]): void {
    const kept = new Set(assets.map((asset) => asset.id));
    for (const [key, video] of this.videos) {
      if (kept.has(key.replace(/ second$/, ''))) continue;
      this.relay?.forget(video);
      release(video);
      this.videos.delete(key);
    }
    for (const id of this.images.keys()) if (!kept.has(id)) this.images.delete(id);
    for (const asset of assets) {
      if (asset.kind === 'video') this.video(asset);
      else if (asset.kind === 'image') this.image(asset);
    }
  }

  /** Brings a layer's video to its source time (and pace, while playing); answers what to draw. */
  private source(layer: ClipLayer, playing: boolean, second: boolean): Drawable | undefined {
    const asset = layer.placed.asset;
    if (!asset) return undefined;
    if (asset.kind === 'image') return this.image(asset);
    if (asset.kind !== 'video') return undefined;
    const video = this.video(asset, second);
    const target = layer.sourceSec + SEEK_NUDGE_SEC;
    if (playing) {
      const drift = video.currentTime - target;
      // A seek on its way is waited for: another one now would start its decoding over.
      if (!video.seeking && Math.abs(drift) > DRIFT_SEC) video.currentTime = target;
      video.playbackRate = (layer.placed.clip.speed ?? 1) * nudge(drift);
      if (video.paused) {
        // Its last pictures are from another time: the video itself is drawn until new ones come.
        this.relay?.forget(video);
        void video.play().catch(() => undefined);
      }
    } else {
      if (!video.paused) video.pause();
      if (!video.seeking && Math.abs(video.currentTime - target) > SEEK_TOLERANCE_SEC)
        video.currentTime = target;
    }
    return video;
  }

  /** Draws one clip, placed on black, through its motion window, onto `target` (the canvas's size). */
  private drawLayer(
    target: CanvasRenderingContext2D,
    layer: ClipLayer,
    playing: boolean,
    second = false,
  ): void {
    const { width, height } = this.canvas;
    target.save();
    target.fillStyle = '#000000';
    target.fillRect(0, 0, width, height);
    const source = this.source(layer, playing, second);
    const [sourceWidth, sourceHeight] =
      source instanceof HTMLVideoElement
        ? [source.videoWidth, source.videoHeight]
        : [source?.naturalWidth ?? 0, source?.naturalHeight ?? 0];
    const ready = source instanceof HTMLVideoElement ? source.readyState >= 2 : source?.complete === true;
    if (source && ready && sourceWidth > 0 && sourceHeight > 0) {
      const placed = placedRect(this.fit, width, height, sourceWidth, sourceHeight);
      const view = layer.window;
      // The window (shares of the frame) is stretched to the whole frame: the export's motion.
      target.setTransform(
        1 / view.width,
        0,
        0,
        1 / view.height,
        (-view.x * width) / view.width,
        (-view.y * height) / view.height,
      );
      // `fill` crops to the frame before the motion moves it, as the export does.
      target.beginPath();
      target.rect(0, 0, width, height);
      target.clip();
      const picture = playing && source instanceof HTMLVideoElement ? this.relay?.picture(source) : null;
      target.drawImage(picture ?? source, placed.x, placed.y, placed.width, placed.height);
    }
    target.restore();
  }

  /** The size a playing video's pictures are made at: the size it is drawn at in the frame. */
  private placedSize(video: HTMLVideoElement): [number, number] {
    const { width, height } = placedRect(
      this.fit,
      this.canvas.width,
      this.canvas.height,
      video.videoWidth,
      video.videoHeight,
    );
    return [width, height];
  }

  private sizeScratch(): void {
    for (const scratch of this.scratch) {
      if (scratch.canvas.width !== this.canvas.width || scratch.canvas.height !== this.canvas.height) {
        scratch.canvas.width = this.canvas.width;
        scratch.canvas.height = this.canvas.height;
      }
    }
  }

  /** Draws the frame `view`; `playing` lets videos run at their pace instead of being seeked. */
  draw(view: FrameView, playing: boolean): void {
    const waiting = playing && (this.relay?.pending ?? false);
    if (playing && view.frame === this.drawnFrame && this.videoFrames === this.drawnVideoFrames && !waiting)
      return;
    if (playing) this.relay?.advance();
    this.drawnFrame = playing ? view.frame : -1;
    this.drawnVideoFrames = this.videoFrames;
    const context = this.context;
    const { width, height } = this.canvas;
    context.save();
    context.fillStyle = '#000000';
    context.fillRect(0, 0, width, height);
    const shown = new Set<HTMLVideoElement>();
    const track = (layer: ClipLayer, second = false) => {
      const asset = layer.placed.asset;
      if (asset?.kind === 'video') shown.add(this.video(asset, second));
    };
    if (view.base && view.transition) {
      // Two clips of one file: the next one plays from a second element of that file.
      const sameFile = view.base.placed.asset?.id === view.transition.incoming.placed.asset?.id;
      track(view.base);
      track(view.transition.incoming, sameFile);
      this.sizeScratch();
      const [before, next] = this.scratch;
      this.drawLayer(before, view.base, playing);
      this.drawLayer(next, view.transition.incoming, playing, sameFile);
      this.drawTransition(view.transition.type, view.transition.done, before.canvas, next.canvas);
    } else if (view.base) {
      track(view.base);
      this.drawLayer(context, view.base, playing);
    }
    if (view.black > 0) {
      context.globalAlpha = view.black;
      context.fillStyle = '#000000';
      context.fillRect(0, 0, width, height);
      context.globalAlpha = 1;
    }
    for (const text of view.texts) drawTextLayer(context, text);
    context.restore();
    // Videos no clip of this frame shows stop decoding.
    this.shown = shown;
    for (const video of this.videos.values()) {
      if (!shown.has(video) && !this.waiting.has(video) && !video.paused) video.pause();
    }
  }

  private drawTransition(
    type: Parameters<typeof transitionLook>[0],
    done: number,
    before: HTMLCanvasElement,
    next: HTMLCanvasElement,
  ): void {
    const context = this.context;
    const { width, height } = this.canvas;
    const look = transitionLook(type, done, width, height);
    context.save();
    switch (look.kind) {
      case 'blend':
        // Added up on black: before × w1 + next × w2 + colour × w3, the weights summing to 1.
        context.globalCompositeOperation = 'lighter';
        context.globalAlpha = look.outgoing;
        context.drawImage(before, 0, 0);
        context.globalAlpha = look.incoming;
        context.drawImage(next, 0, 0);
        context.globalAlpha = look.colourWeight;
        context.fillStyle = look.colour;
        context.fillRect(0, 0, width, height);
        break;
      case 'wipe':
        context.drawImage(before, 0, 0);
        context.beginPath();
        context.rect(look.incoming.x, look.incoming.y, look.incoming.width, look.incoming.height);
        context.clip();
        context.drawImage(next, 0, 0);
        break;
      case 'slide':
        context.drawImage(before, look.outgoingX, 0);
        context.drawImage(next, look.incomingX, 0);
        break;
      case 'circle': {
        // The next clip masked by a radial ramp (opaque inside, clear outside), laid over the clip before.
        const mask = this.scratch[1];
        if (look.outerRadius > 0) {
          const ramp = mask.createRadialGradient(
            look.centreX,
            look.centreY,
            look.innerRadius,
            look.centreX,
            look.centreY,
            Math.max(look.outerRadius, look.innerRadius + 1),
          );
          ramp.addColorStop(0, 'rgba(0, 0, 0, 1)');
          ramp.addColorStop(1, 'rgba(0, 0, 0, 0)');
          mask.save();
          mask.globalCompositeOperation = 'destination-in';
          mask.fillStyle = ramp;
          mask.fillRect(0, 0, width, height);
          mask.restore();
        }
        context.drawImage(before, 0, 0);
        if (look.outerRadius > 0) context.drawImage(next, 0, 0);
        break;
      }
    }
    context.restore();
  }

  /**
   * Readies the videos of `view` (a frame a little ahead) that the current frame does not show: each is put
   * at the time its clip enters and started at pace 0, so that at its cut it only has to go on — starting a
   * paused video takes a busy machine a few hundred milliseconds, a stall on every cut.
   */
  preroll(view: FrameView): void {
    const ahead = new Set<HTMLVideoElement>();
    const ready = (layer: ClipLayer | undefined, second = false) => {
      const asset = layer?.placed.asset;
      if (!layer || asset?.kind !== 'video') return;
      const video = this.video(asset, second);
      if (this.shown.has(video)) return;
      ahead.add(video);
      if (this.waiting.has(video)) return;
      const speed = layer.placed.clip.speed ?? 1;
      video.currentTime = layer.sourceSec - (layer.frameInClip / PREVIEW_FPS) * speed + SEEK_NUDGE_SEC;
      video.playbackRate = 0;
      this.relay?.forget(video);
      void video.play().catch(() => undefined);
      this.waiting.add(video);
    };
    const sameFile = view.base?.placed.asset?.id === view.transition?.incoming.placed.asset?.id;
    ready(view.base ?? undefined);
    ready(view.transition?.incoming, sameFile);
    // Readied but no longer ahead (a seek, an edit): paused by the next frame unless it shows them.
    for (const video of this.waiting)
      if (!ahead.has(video) || this.shown.has(video)) this.waiting.delete(video);
  }

  /** Pauses every video (playback stopped). */
  pauseAll(): void {
    this.waiting.clear();
    this.drawnFrame = -1;
    this.relay?.forgetAll();
    for (const video of this.videos.values()) if (!video.paused) video.pause();
  }

  /** Lets the media go (the player is unmounted). */
  dispose(): void {
    for (const video of this.videos.values()) release(video);
    this.videos.clear();
    this.relay?.dispose();
    this.images.clear();
  }
}
