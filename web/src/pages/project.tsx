import { useState } from 'preact/hooks';
import { describeError } from '../api.ts';
import type { ExportFit } from '../api-types.ts';
import { assetName } from '../editor/asset-names.ts';
import { ExportPanel } from '../editor/export-panel.tsx';
import { ChatColumn } from '../studio/chat-column.tsx';
import { ClipInspector } from '../studio/clip-inspector.tsx';
import { latestExport, runExport } from '../studio/export-run.ts';
import { LibraryGrid } from '../studio/library-grid.tsx';
import { placeClips, timelineLengthSec } from '../studio/placements.ts';
import { PreviewPlayer } from '../studio/preview-player.tsx';
import '../studio/studio-layout.css';
import { TimelineView } from '../studio/timeline-view.tsx';
import { clipActions, useProjectEdits } from '../studio/use-project-edits.ts';
import { useProjectLive } from '../studio/use-project-live.ts';
import { useStudio } from '../studio/use-studio.ts';
import { VideoTabs } from '../studio/video-tabs.tsx';
import { ErrorText, Link, Notice, useTitle } from '../ui.tsx';

/** One project in the editor: videos, chat, library, timeline, preview and export, kept live by its events. */
export function ProjectPage(props: { projectId: string }) {
  const { projectId } = props;
  const live = useProjectLive(projectId);
  const { state, videoId, socketStatus } = live;
  const edits = useProjectEdits(live);
  // The export panel's Fit, which the preview player places pictures by too.
  const [fit, setFit] = useState<ExportFit>('fit');
  useTitle(state?.project.name ?? 'Editor');

  const clips = state ? state.clips.filter((c) => c.video_id === videoId) : [];
  const placed = state ? placeClips(clips, state.assets) : [];
  const studio = useStudio(videoId, timelineLengthSec(placed), edits.sendCall, live.scheduleReload);
  const actions = clipActions(edits, studio, placed, videoId);
  /** A timeline gesture's edit: a refused one shows the API's message. */
  const studioEdit = (run: () => Promise<boolean>): void => {
    run().catch((err: unknown) => edits.setNotice(describeError(err)));
  };

  if (live.deleted) {
    return (
      <section>
        <h1>Project deleted</h1>
        <p>
          This project was deleted. <Link href="/editor">Back to your projects</Link>
        </p>
      </section>
    );
  }
  if (!state) {
    return (
      <section>
        <h1>Editor</h1>
        <ErrorText error={live.loadError} />
        {!live.loadError && <p>Loading the project…</p>}
        <p>
          <Link href="/editor">Back to your projects</Link>
        </p>
      </section>
    );
  }

  const selected = placed.find((p) => p.clip.id === studio.selectedId);
  return (
    <section class="editor studio">
      <div class="row-head">
        <h1>{state.project.name}</h1>
        <span class={'badge live-' + socketStatus} title="Live updates">
          {socketStatus === 'live' ? 'Live' : socketStatus === 'closed' ? 'Offline' : 'Connecting…'}
        </span>
      </div>
      <p class="hint">
        <Link href="/editor">All projects</Link> · revision {state.project.revision}
      </p>
      <ErrorText error={live.loadError} />
      <Notice text={edits.notice} />
      <VideoTabs
        videos={state.videos}
        selected={videoId}
        onSelect={live.setVideoId}
        onAdd={() => void edits.addVideo()}
      />
      <div
        id="video-panel"
        role="tabpanel"
        aria-labelledby={videoId ? 'tab-' + videoId : undefined}
        class="studio-grid"
      >
        <div class="studio-main">
          {/* The page owns the playhead and whether it plays; the player moves the time while it plays. */}
          <PreviewPlayer
            clips={clips}
            assets={state.assets}
            aspectRatio={
              state.videos.find((v) => v.id === videoId)?.aspect_ratio ?? state.project.aspect_ratio
            }
            timeSec={studio.timeSec}
            onTime={studio.seek}
            playing={studio.playing}
            onPlayingChange={studio.setPlaying}
            fit={fit}
          />
          <TimelineView
            placed={placed}
            lengthSec={timelineLengthSec(placed)}
            videoId={videoId}
            nameOf={assetName}
            timeSec={studio.timeSec}
            onSeek={studio.seek}
            onPlayPause={() => studio.setPlaying(!studio.playing)}
            selectedId={studio.selectedId}
            onSelect={studio.select}
            saving={studio.saving}
            onEdit={(entry, clipId) => studioEdit(() => studio.perform(entry, clipId))}
            canUndo={studio.canUndo}
            canRedo={studio.canRedo}
            onUndo={() => studioEdit(studio.undo)}
            onRedo={() => studioEdit(studio.redo)}
          />
          <ClipInspector
            selected={selected}
            count={placed.filter((p) => p.clip.track === selected?.clip.track).length}
            actions={actions}
          />
          <LibraryGrid
            projectId={projectId}
            assets={state.assets}
            onChanged={live.scheduleReload}
            onPlace={edits.place}
          />
        </div>
        <div class="studio-side">
          <ChatColumn live={live} />
          {/* The export's Fit and Quality fields live in the panel (web/src/editor/export-panel.tsx). */}
          <ExportPanel
            latest={latestExport(state.assets, videoId)}
            run={live.exportRun}
            canExport={clips.some((c) => c.track === 'video')}
            onExport={(fit, quality) => void runExport(live, fit, quality)}
            fit={fit}
            onFitChange={setFit}
          />
          {state.project.context_md && (
            <details class="context">
              <summary>Project context</summary>
              <pre>{state.project.context_md}</pre>
            </details>
          )}
        </div>
      </div>
    </section>
  );
}
