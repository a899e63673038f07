// The preview's video frames made into pictures off the page's thread (preview-video-frames.ts): a decoded
// frame's colours are converted and scaled here, on an OffscreenCanvas of the size the preview draws it at,
// and the picture goes back as an ImageBitmap.

interface FrameRequest {
  id: number;
  frame: VideoFrame;
  width: number;
  height: number;
}

interface WorkerScope {
  onmessage: ((event: MessageEvent<FrameRequest>) => void) | null;
  postMessage(message: unknown, transfer: Transferable[]): void;
}

const scope = self as unknown as WorkerScope;
let canvas: OffscreenCanvas | null = null;

scope.onmessage = (event) => {
  const { id, frame, width, height } = event.data;
  if (!canvas || canvas.width !== width || canvas.height !== height)
    canvas = new OffscreenCanvas(width, height);
  canvas.getContext('2d')!.drawImage(frame, 0, 0, width, height);
  frame.close();
  const picture = canvas.transferToImageBitmap();
  scope.postMessage({ id, picture }, [picture]);
};
