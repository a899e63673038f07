// Undo and redo of the user's own direct edits on the timeline. Each entry holds the REST calls that make the
// edit and the calls that take it back; the page sends each as the REST edit with If-Match. A clip removed and
// added again comes back with a new id, and so does the rest of a split each time it is redone: a call names
// its clip by a reference that the history maps to the clip's current id. An entry of several calls is made
// entirely or not at all: when a later call fails, the calls made are taken back (docs/dashboard.md "Undo").
import type { AddClipRequest, PatchClipRequest } from '../api-types.ts';

/** One REST edit of a clip: `clipRef` is a clip id, or a reference a `POST` of this history gave an id to. */
export type EditCall =
  | { method: 'PATCH'; clipRef: string; body: PatchClipRequest }
  | { method: 'DELETE'; clipRef: string }
  | {
      method: 'POST';
      body: AddClipRequest;
      /** the reference later calls use for the new clip */ createsRef: string;
    };

/**
 * One call of an entry, with the calls that take it back alone: when a later call of the same entry fails, the
 * calls already made are taken back so the entry is made entirely or not at all (docs/dashboard.md "Undo").
 */
export interface EditStep {
  call: EditCall;
  back: EditCall[];
}

/** An edit the user made, with its way back. */
export interface HistoryEntry {
  /** What the edit did, for the buttons' titles ("Undo move"). */
  label: string;
  forward: EditStep[];
  inverse: EditStep[];
}

/** The calls of steps, in order. */
export const callsOf = (steps: readonly EditStep[]): EditCall[] => steps.map((step) => step.call);

/** A call ready to send: the path below the project, and its body. */
export interface ResolvedCall {
  method: 'PATCH' | 'DELETE' | 'POST';
  path: string;
  body?: PatchClipRequest | AddClipRequest;
}

/**
 * Sends one call (with If-Match); answers the new clip's id for a POST, true for another call that worked,
 * false when nothing was changed (a 409: the page re-read the project). It throws a refused edit's error.
 */
export type CallSender = (call: ResolvedCall) => Promise<string | boolean>;

/** How many edits can be undone. */
export const HISTORY_LIMIT = 100;

let nextRef = 0;
/** A fresh reference for a clip a POST will create. */
export const newClipRef = (): string => `new-clip-${++nextRef}`;

/**
 * An entry whose calls each have one call back: forward they run in order, back their inverses in the
 * opposite order.
 */
export function pairedEntry(
  label: string,
  pairs: readonly { make: EditCall; back: EditCall }[],
): HistoryEntry {
  return {
    label,
    forward: pairs.map(({ make, back }) => ({ call: make, back: [back] })),
    inverse: pairs.toReversed().map(({ make, back }) => ({ call: back, back: [make] })),
  };
}

/** A patch and the patch back. */
export const patchEntry = (
  label: string,
  clipId: string,
  patch: PatchClipRequest,
  back: PatchClipRequest,
): HistoryEntry =>
  pairedEntry(label, [
    {
      make: { method: 'PATCH', clipRef: clipId, body: patch },
      back: { method: 'PATCH', clipRef: clipId, body: back },
    },
  ]);

/**
 * A patch of a field the clip leaves null (`duration_sec`: to the asset's end; `start_sec`: right after the
 * clip before), which a PATCH cannot set back to null (docs/editor.md, `PATCH /projects/<id>/clips/<clip_id>`):
 * it is taken back by removing the clip and adding it again as it was (`original`), that field absent. The
 * clip comes back with a new id, which the history follows. `patched` is the clip as the patch left it.
 */
export const patchReAddedEntry = (
  label: string,
  clipId: string,
  patch: PatchClipRequest,
  adds: { original: AddClipRequest; patched: AddClipRequest },
): HistoryEntry => {
  const remove: EditCall = { method: 'DELETE', clipRef: clipId };
  const addOriginal: EditCall = { method: 'POST', body: adds.original, createsRef: clipId };
  return {
    label,
    forward: [{ call: { method: 'PATCH', clipRef: clipId, body: patch }, back: [remove, addOriginal] }],
    inverse: [
      { call: remove, back: [{ method: 'POST', body: adds.patched, createsRef: clipId }] },
      { call: addOriginal, back: [remove] },
    ],
  };
};

/** A delete, and adding the clip again with the same fields (the history then maps its id to the new one). */
export const deleteEntry = (clipId: string, readd: AddClipRequest): HistoryEntry =>
  pairedEntry('delete', [
    {
      make: { method: 'DELETE', clipRef: clipId },
      back: { method: 'POST', body: readd, createsRef: clipId },
    },
  ]);

/** A new clip (a drop from the library), taken back by deleting it. */
export const addEntry = (body: AddClipRequest): HistoryEntry => {
  const ref = newClipRef();
  return pairedEntry('add', [
    { make: { method: 'POST', body, createsRef: ref }, back: { method: 'DELETE', clipRef: ref } },
  ]);
};

/** A split: the clip shortened and the rest added; back: the rest deleted and the clip's length restored. */
export const splitEntry = (
  clipId: string,
  plan: { shorten: PatchClipRequest; restore: PatchClipRequest; add: AddClipRequest },
): HistoryEntry => {
  const ref = newClipRef();
  return pairedEntry('split', [
    {
      make: { method: 'PATCH', clipRef: clipId, body: plan.shorten },
      back: { method: 'PATCH', clipRef: clipId, body: plan.restore },
    },
    { make: { method: 'POST', body: plan.add, createsRef: ref }, back: { method: 'DELETE', clipRef: ref } },
  ]);
};

/**
 * An entry that stopped part-way (a later call refused, or a 409): the calls it had made were taken back, or,
 * when that failed too (`restored` false), the history was cleared since it no longer matches the project.
 */
export class EditRolledBack extends Error {
  constructor(
    readonly action: string,
    readonly reason: string,
    readonly restored: boolean,
  ) {
    super(
      restored
        ? `${action} stopped part-way (${reason}); what it had changed was taken back.`
        : `${action} stopped part-way (${reason}) and could not be taken back entirely; the project was re-read and the undo history cleared.`,
    );
    this.name = 'EditRolledBack';
  }
}

/** The undo and redo stacks and the map from clip references to current ids. */
export class EditHistory {
  private done: HistoryEntry[] = [];
  private undone: HistoryEntry[] = [];
  private readonly ids = new Map<string, string>();
  private readded = new Map<string, string>();

  get canUndo(): boolean {
    return this.done.length > 0;
  }
  get canRedo(): boolean {
    return this.undone.length > 0;
  }
  /** The label of the edit Undo would take back. */
  get undoLabel(): string | undefined {
    return this.done.at(-1)?.label;
  }
  get redoLabel(): string | undefined {
    return this.undone.at(-1)?.label;
  }

  /** The call with its clip reference turned into the clip's current id. */
  resolve(call: EditCall): ResolvedCall {
    if (call.method === 'POST') return { method: 'POST', path: '/clips', body: call.body };
    const id = this.idOf(call.clipRef);
    const path = '/clips/' + encodeURIComponent(id);
    return call.method === 'PATCH' ? { method: 'PATCH', path, body: call.body } : { method: 'DELETE', path };
  }

  /** A clip reference's current id (a plain id maps to itself until a re-add gives it another). */
  idOf(ref: string): string {
    return this.ids.get(ref) ?? ref;
  }

  /**
   * The clips the last edit, undo or redo removed and added again (a null length restored): each one's id
   * before, and its new id. The map is not changed afterwards: the next edit starts another.
   */
  get readdedIds(): ReadonlyMap<string, string> {
    return this.readded;
  }

  /** Makes a new edit: runs its calls, and when they all worked, makes it the one to undo (redo is cleared). */
  async perform(entry: HistoryEntry, send: CallSender): Promise<boolean> {
    if (!(await this.run(`The ${entry.label}`, entry.forward, send))) return false;
    this.done.push(entry);
    if (this.done.length > HISTORY_LIMIT) this.done.shift();
    this.undone = [];
    this.forgetUnused();
    return true;
  }

  /** Drops the ids of references no kept entry names: the map stays as small as the history. */
  private forgetUnused(): void {
    const named = new Set<string>();
    for (const entry of [...this.done, ...this.undone]) {
      for (const step of [...entry.forward, ...entry.inverse])
        for (const call of [step.call, ...step.back])
          named.add(call.method === 'POST' ? call.createsRef : call.clipRef);
    }
    for (const ref of this.ids.keys()) if (!named.has(ref)) this.ids.delete(ref);
  }

  /** Takes back the last edit; when the project changed under it (409), it stays to be tried again. */
  async undo(send: CallSender): Promise<boolean> {
    const entry = this.done.at(-1);
    if (!entry || !(await this.run(`Undoing the ${entry.label}`, entry.inverse, send))) return false;
    this.done.pop();
    this.undone.push(entry);
    return true;
  }

  /** Makes the last undone edit again. */
  async redo(send: CallSender): Promise<boolean> {
    const entry = this.undone.at(-1);
    if (!entry || !(await this.run(`Redoing the ${entry.label}`, entry.forward, send))) return false;
    this.undone.pop();
    this.done.push(entry);
    return true;
  }

  /** Forgets everything (another video is shown). */
  clear(): void {
    this.done = [];
    this.undone = [];
    this.ids.clear();
  }

  /**
   * Runs the steps one after the other: each needs the revision the one before it made. The first failing
   * alone changed nothing (false on a 409, its error thrown); a later one takes back those made and throws
   * EditRolledBack, the entry staying where it was.
   */
  private async run(action: string, steps: readonly EditStep[], send: CallSender): Promise<boolean> {
    const made: EditStep[] = [];
    this.readded = new Map();
    for (const step of steps) {
      let answer: string | boolean;
      try {
        answer = await this.send(step.call, send);
      } catch (err) {
        if (made.length === 0) throw err;
        return this.rollBack(action, made, send, err instanceof Error ? err.message : String(err));
      }
      if (answer === false)
        return made.length === 0 ? false : this.rollBack(action, made, send, 'the project changed');
      made.push(step);
    }
    return true;
  }

  /** Takes back the steps made, the last first, as far as it can (best effort), and says what happened. */
  private async rollBack(
    action: string,
    made: readonly EditStep[],
    send: CallSender,
    reason: string,
  ): Promise<never> {
    let restored = true;
    for (const step of made.toReversed()) {
      for (const call of step.back) {
        try {
          if ((await this.send(call, send)) === false) restored = false;
        } catch {
          restored = false;
        }
      }
    }
    if (!restored) this.clear();
    throw new EditRolledBack(action, reason, restored);
  }

  /** Sends one call, and follows the id a POST gave its clip. */
  private async send(call: EditCall, send: CallSender): Promise<string | boolean> {
    const answer = await send(this.resolve(call));
    if (call.method === 'POST' && typeof answer === 'string') {
      this.readded.set(this.idOf(call.createsRef), answer);
      this.ids.set(call.createsRef, answer);
    }
    return answer;
  }
}
