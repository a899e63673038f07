import { Fragment, type ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { INSTRUCTION_MAX, TURN_CREDITS, type Message } from '../api-types.ts';
import { ErrorText, formValue } from '../ui.tsx';

/** The turn in progress on this video, as far as the page knows it. */
export interface LiveTurn {
  turnId: string | null;
  instruction: string;
  text: string;
  failed?: string;
}

/**
 * The video's thread, the reply streaming in, and the instruction field. `turnDetails`, when given, is drawn
 * between each turn's instruction and its reply (the studio shows the turn's steps there).
 */
export function Chat(props: {
  messages: Message[] | null;
  live: LiveTurn | null;
  error: string | null;
  sending: boolean;
  onSend: (instruction: string) => Promise<boolean>;
  turnDetails?: (turnId: string) => ComponentChildren;
}) {
  const [instruction, setInstruction] = useState('');
  const end = useRef<HTMLDivElement>(null);
  const liveText = props.live?.text ?? '';
  useEffect(() => {
    const box = end.current?.parentElement;
    if (box) box.scrollTop = box.scrollHeight;
  }, [props.messages, liveText, props.live, props.turnDetails]);
  const liveTurnId = props.live?.turnId ?? null;
  // Once the thread holds the live turn's messages, its details are drawn there, not twice.
  const liveDetails =
    liveTurnId !== null && !props.messages?.some((m) => m.turn_id === liveTurnId)
      ? props.turnDetails?.(liveTurnId)
      : null;
  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    const text = formValue(event, 'instruction').trim();
    if (!text) return;
    if (await props.onSend(text)) setInstruction('');
  };
  return (
    <section class="chat" aria-labelledby="chat-title">
      <h2 id="chat-title">Chat with the director</h2>
      {/* It scrolls, so it takes focus: keyboard users scroll it too. */}
      <div
        class="thread"
        role="log"
        aria-label="Conversation"
        tabIndex={0}
        aria-live="polite"
        aria-relevant="additions text"
      >
        {props.messages === null && <p class="hint">Loading the thread…</p>}
        {props.messages?.length === 0 && !props.live && (
          <p class="hint">
            Tell the director what to make, for example “a 3-scene video about a lighthouse at dawn”.
          </p>
        )}
        {props.messages?.map((m) => (
          <Fragment key={m.id}>
            <div class={'msg ' + m.role}>
              <span class="who">{m.role === 'user' ? 'You' : 'Director'}</span>
              <p>{m.text || (m.image_urls?.length ? `(${m.image_urls.length} image(s))` : '')}</p>
            </div>
            {m.role === 'user' && props.turnDetails?.(m.turn_id)}
          </Fragment>
        ))}
        {props.live && (
          <>
            {props.live.instruction && (
              <div class="msg user pending">
                <span class="who">You</span>
                <p>{props.live.instruction}</p>
              </div>
            )}
            {liveDetails}
            <div class="msg assistant pending">
              <span class="who">Director</span>
              <p>{props.live.failed ?? (props.live.text || 'Working…')}</p>
            </div>
          </>
        )}
        <div ref={end} />
      </div>
      <form class="chat-form" onSubmit={submit}>
        <label for="instruction">Instruction</label>
        <textarea
          id="instruction"
          name="instruction"
          rows={3}
          maxLength={INSTRUCTION_MAX}
          value={instruction}
          onInput={(e) => setInstruction(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              e.currentTarget.form?.requestSubmit();
            }
          }}
        />
        <ErrorText error={props.error} />
        <div class="actions">
          <button type="submit" disabled={props.sending}>
            Send
          </button>
          <span class="hint">Each turn costs {TURN_CREDITS} credits, plus any media it generates.</span>
        </div>
      </form>
    </section>
  );
}
