// While the preview plays, each new frame of a video is made into a picture of the size it is drawn at by a
// worker (preview-video-worker.ts), and the compositor draws that picture. Drawing a decoded frame itself
// converts its colours and scales it on the page's thread: for a 1280x720 frame that is 15–25 ms on a busy
// two-core machine (docs/benchmarks.md, Dashboard), more than half of a 30 fps frame's time. A picture is a
// frame late, or three animation frames when a busy worker sent several at once (each is shown, in order);
// while paused the compositor draws the video itself (one frame, exact).

/**
 * One video's pictures: the one shown first, then those that came since the last draw (shown one a draw, so
 * that two arriving between two animation frames are both seen), the newest request's number, and how many
 * frames are on their way (at most IN_FLIGHT: a busy worker skips frames rather than fall behind).
 */
interface Relayed {
  pictures: ImageBitmap[];
  pictureId: number;
  waiting: number;
}

/** Pictures kept waiting to be shown, past the one shown: more means the page is behind, and the oldest go. */
const QUEUED = 2;

/** Frames of one video being made into pictures at once: two, so that the worker works while one travels. */
const IN_FLIGHT = 2;

export class VideoFrameRelay {
  private worker: Worker | null = null;
  private readonly videos = new Map<HTMLVideoElement, Relayed>();
  private readonly asked = new Map<number, HTMLVideoElement>();
  private nextId = 0;

  /** `onPicture` asks for a redraw when a picture has come. */
  constructor(private readonly onPicture: () => void) {}

  /** Whether the browser can relay frames (VideoFrame and OffscreenCanvas). */
  static get supported(): boolean {
    return typeof VideoFrame === 'function' && typeof OffscreenCanvas === 'function';
  }

  /** Sends the frame `video` shows to be made into a `width`×`height` picture, unless one is on its way. */
  send(video: HTMLVideoElement, width: number, height: number): void {
    const relayed = this.videos.get(video) ?? { pictures: [], pictureId: 0, waiting: 0 };
    this.videos.set(video, relayed);
    if (relayed.waiting >= IN_FLIGHT || width < 1 || height < 1) return;
    let frame: VideoFrame;
    try {
      frame = new VideoFrame(video);
    } catch {
      return; // no frame to take yet
    }
    const id = ++this.nextId;
    relayed.waiting++;
    this.asked.set(id, video);
    this.start().postMessage({ id, frame, width: Math.round(width), height: Math.round(height) }, [frame]);
  }

  /** The picture of `video` to draw now, if one came since it was last forgotten. */
  picture(video: HTMLVideoElement): ImageBitmap | null {
    return this.videos.get(video)?.pictures[0] ?? null;
  }

  /** Moves each video on to its next waiting picture: called once for each frame drawn while playing. */
  advance(): void {
    for (const relayed of this.videos.values()) {
      if (relayed.pictures.length > 1) relayed.pictures.shift()!.close();
    }
  }

  /** Whether a picture is waiting to be shown (the next animation frame should draw). */
  get pending(): boolean {
    for (const relayed of this.videos.values()) if (relayed.pictures.length > 1) return true;
    return false;
  }

  /** Drops the pictures of `video` (it starts playing elsewhere, or goes): a frame on its way is ignored. */
  forget(video: HTMLVideoElement): void {
    const relayed = this.videos.get(video);
    if (!relayed) return;
    for (const picture of relayed.pictures) picture.close();
    for (const [id, asked] of this.asked) if (asked === video) this.asked.delete(id);
    this.videos.delete(video);
  }

  /** Drops every picture (playback stopped). */
  forgetAll(): void {
    for (const video of [...this.videos.keys()]) this.forget(video);
  }

  /** Ends the worker (the player is unmounted). */
  dispose(): void {
    this.forgetAll();
    this.worker?.terminate();
    this.worker = null;
  }

  private start(): Worker {
    if (!this.worker) {
      this.worker = new Worker(new URL('./preview-video-worker.ts', import.meta.url), { type: 'module' });
      this.worker.onmessage = (event: MessageEvent<{ id: number; picture: ImageBitmap }>) => {
        const { id, picture } = event.data;
        const video = this.asked.get(id);
        this.asked.delete(id);
        const relayed = video ? this.videos.get(video) : undefined;
        if (relayed) relayed.waiting--;
        // Forgotten since, or older than the picture shown: dropped.
        if (!relayed || id < relayed.pictureId) {
          picture.close();
          return;
        }
        relayed.pictures.push(picture);
        while (relayed.pictures.length > 1 + QUEUED) relayed.pictures.splice(1, 1)[0]!.close();
        relayed.pictureId = id;
        this.onPicture();
      };
    }
    return this.worker;
  }
}
