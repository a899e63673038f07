// The studio's chat: the selected video's thread, the turn being answered live, its steps, and the field that
// sends an instruction to the project's agent (docs/dashboard.md "The timeline").
import { useState } from 'preact/hooks';
import { describeError, v1 } from '../api.ts';
import type { InstructRequest } from '../api-types.ts';
import { StudioChat } from './turn-log.tsx';
import type { ProjectLive } from './use-project-live.ts';

export function ChatColumn(props: { live: ProjectLive }) {
  const { base, videoId, messages, live, chatError, turnSteps } = props.live;
  const { setLive, setChatError, threadReads, turnEndedAt } = props.live;
  const [sending, setSending] = useState(false);

  const send = async (instruction: string): Promise<boolean> => {
    if (!videoId) return false;
    setSending(true);
    setChatError(null);
    setLive((old) => old ?? { turnId: null, instruction, text: '' });
    turnEndedAt.current = null;
    try {
      const body: InstructRequest = { instruction, video_id: videoId };
      await v1('POST', base + '/instruct', { json: body });
      // The turn's end, when its event came first, asked for the re-read this needs: share it.
      await threadReads.after(turnEndedAt.current ?? undefined);
      setLive(null);
      return true;
    } catch (err) {
      setChatError(describeError(err));
      setLive(null);
      await threadReads.after();
      return false;
    } finally {
      setSending(false);
    }
  };

  return (
    <StudioChat
      messages={messages}
      live={live}
      error={chatError}
      sending={sending}
      onSend={send}
      steps={turnSteps}
    />
  );
}
