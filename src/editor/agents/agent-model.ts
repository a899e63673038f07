import type { ClipRecord } from '../../../actors/index.ts';

// The agent of the editor, a port (docs/architecture.md, Conventions): the builtin director and the LLM agent
// (docs/editor.md) both implement it. An agent decides; the runtime acts: every change goes through a tool,
// and the runtime enforces the rules (one media generation per turn, ids of this project only).

/** An asset as the agent sees it. */
export interface AgentAsset {
  id: string;
  kind: 'image' | 'video' | 'audio';
  source: string;
  url: string;
  metadata: Record<string, unknown>;
}

/** A library item in compact form (the system prompt lists them; `list_assets` answers the same). */
export interface AgentLibraryItem {
  id: string;
  kind: 'image' | 'video' | 'audio';
  source: string;
  prompt: string | null;
  duration_sec: number | null;
}

/** A clip of the target video as the agent sees it. */
export type AgentClip = Omit<ClipRecord, 'video_id' | 'created_at'>;

/** What one turn starts from. */
export interface AgentTurnInput {
  /** The user's text ('' when only images were sent). */
  instruction: string;
  /** The turn's reference images (`image_urls`), already in the library. */
  references: AgentAsset[];
  project: { id: string; name: string; aspect_ratio: string; context_md: string };
  /** The video the turn works on. */
  video: { id: string; name: string; aspect_ratio: string };
  /** The video's thread before this turn, oldest first (bounded). */
  history: { role: 'user' | 'assistant'; text: string }[];
  /** The project's library when the turn starts, oldest first. */
  library: AgentLibraryItem[];
  /** The target video's clips when the turn starts, by track and position. */
  timeline: AgentClip[];
}

/** A tool's answer: what it did (`result`, JSON) or why it did nothing (`error`, shown to the agent). */
export type ToolOutcome = { ok: true; result: unknown; summary: string } | { ok: false; error: string };

/** The operations an agent may run during its turn (docs/editor.md, The tools). */
export interface AgentTools {
  /**
   * Runs one tool by its public name (`schemas/agent-tools.ts` has their parameters); never throws for a bad
   * call (the outcome says why), only when the turn itself is over.
   */
  call(name: string, args: unknown): Promise<ToolOutcome>;
  /**
   * Announces a call that cannot run as made (its arguments are not JSON) and answers its tool error, so the
   * refusal is seen like any other tool call.
   */
  refuse(name: string, error: string): Promise<ToolOutcome>;
}

/** How an agent speaks while it works. */
export interface AgentOutput {
  /** A piece of the reply (`assistant.delta`); the builtin agent sends its reply in one piece. */
  say(text: string): void;
  /** Aborted when the turn is over for the runtime (project deleted, lease lost). */
  signal: AbortSignal;
}

/** The agent's answer: its whole reply (usually ending with a confirmation question). */
export interface AgentReply {
  text: string;
  /** Tokens the turn used (the LLM agent; the builtin agent uses none). */
  usage?: AgentUsage;
}

/** Tokens used by one turn's completions, as the LLM server counted them. */
export interface AgentUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Completions (model calls) of the turn. */
  completions: number;
}

/** Raised by an agent whose upstream failed; `status` 503 (credentials) or 502 (anything else). */
export class AgentFailure extends Error {
  /** Tokens the turn used before it failed (set by the agent that raises it). */
  usage: AgentUsage | undefined;

  constructor(
    readonly status: 502 | 503,
    message: string,
  ) {
    super(message);
    this.name = 'AgentFailure';
  }
}

/** An agent (port). */
export interface AgentModel {
  /** False when the agent cannot run here (its credentials are missing): instruct answers 503. */
  readonly configured: boolean;
  runTurn(input: AgentTurnInput, tools: AgentTools, output: AgentOutput): Promise<AgentReply>;
}
