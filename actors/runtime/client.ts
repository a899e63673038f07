import type { Static } from 'typebox';
import type { ActorDefinition, AnyActorDefinition, CommandSchemas } from './define.ts';
import type { ActorSystem } from './system.ts';

/** A value as it comes back through JSON: dates become ISO strings (nested `undefined` fields disappear). */
export type Json<T> = T extends Date
  ? string
  : T extends readonly (infer Item)[]
    ? Json<Item>[]
    : T extends object
      ? { [K in keyof T]: Json<T[K]> }
      : T;

/** What a caller gets for a handler's result: its JSON form; nothing (`undefined`) becomes `null`. */
export type Reply<Result> = [Result] extends [undefined | void] ? null : Json<Result>;

type ResultOf<Handler> = Handler extends (...args: never[]) => Promise<infer Result> ? Result : never;

/** Per-call options of a typed client. */
export interface AskOptions {
  /** Overrides the kind's `askTimeoutMs` for this call. */
  timeoutMs?: number;
}

/**
 * The typed callers' view of one actor kind, derived from its definition: one method per command, taking the
 * actor's key and the command's message (its schema's type) and resolving to the handler's answer.
 */
export type ActorClient<Definition> =
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- only the commands and handlers matter here
  Definition extends ActorDefinition<any, infer Commands extends CommandSchemas, infer Handlers>
    ? {
        [Name in keyof Commands & keyof Handlers & string]: (
          key: string,
          message: Static<Commands[Name]>,
          options?: AskOptions,
        ) => Promise<Reply<ResultOf<Handlers[Name]>>>;
      }
    : never;

/** `ask`s of one kind's commands through `system`, typed from the definition (no hand-written interface). */
export function actorClient<Definition extends AnyActorDefinition>(
  system: ActorSystem,
  actor: Definition,
): ActorClient<Definition> {
  const client: Record<string, unknown> = {};
  for (const type of Object.keys(actor.commands)) {
    client[type] = (key: string, message: object, options: AskOptions = {}) =>
      system.ask(actor.kind, key, { ...message, type }, options);
  }
  return client as ActorClient<Definition>;
}
